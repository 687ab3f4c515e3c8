#!/bin/bash
# The cross-pipeline silent-error suite end to end (tools/eval/silent_cross_eval.py,
# as `make eval-silent` runs it), as a user works: three healthy reference
# programs of other shapes than the cases, recorded with plain `record --python`,
# rules inferred once, then each case's buggy and fixed twin recorded the same way
# and checked, and a healthy program of yet another shape (no twin). Asserted
# against the workloads' own logs: no violation on any fixed twin or healthy
# program (healthy programs of other shapes), no rule firing on them, and every
# case flagged at its trigger step or the next, none before. A layer frozen
# mid-run with requires_grad_(False) is what a fine-tuning schedule does on
# purpose: that case is said as a notice at its trigger, not a violation.
source "$(dirname "$0")/lib.sh"
torch_stack
status=0
python3 "$ROOT/tools/eval/silent_cross_eval.py" --tcheck "$TCHECK" --work "$SCRATCH/suite" \
	--python "$TORCH_PYTHON" --jobs "$EVAL_JOBS" $SHARED_REFERENCES --results "$SCRATCH/results.json" \
	>"$SCRATCH/suite.txt" 2>&1 ||
	status=$?
# 1: a case missed or a healthy program flagged (said below); 2: an error.
[ "$status" -le 1 ] || fail "suite exited $status: $(tail -20 "$SCRATCH/suite.txt")"
python3 - "$SCRATCH/results.json" "$SCRATCH/suite" <<'PY' || fail "results: $(tail -20 "$SCRATCH/suite.txt")"
import glob, json, os, sys
results = json.load(open(sys.argv[1]))
summary, cases, healthy = results["summary"], results["cases"], results["healthy"]
assert len(cases) >= 11, len(cases)
# Healthy programs of other shapes: nothing fires.
assert summary["violations_fixed"] == 0, [(c["case"], c["fixed_rules"]) for c in cases]
assert healthy and all(p["violations"] == 0 for p in healthy), healthy
assert all(min(p["optimizer_steps_seen"]) >= 10 for p in healthy), healthy
assert summary["rules_firing_on_fixed"] == 0, summary["firing_rules"]
# What the rules see from outside: zero_grad, the optimizer's step in training mode, the
# weights it changes, the scalars its updates apply from step to step, what each DDP
# rank does to its replica and what its replica holds (a digest of the tensors' bytes).
expected = {"zero_grad missing", "every layer frozen by a wrong prefix",
            "optimizer on a re-created model", "eval() never undone",
            "warm-up at learning rate 0", "optimizer on unused parameters",
            "optimizer.step skipped", "clipping on one DDP rank",
            "learning rate silently changed", "rollback on one DDP rank"}
noticed = {"layer frozen mid-run"}
by_name = {c["case"]: c for c in cases}
assert expected | noticed <= by_name.keys(), by_name.keys()
for name in expected:
    c = by_name[name]
    assert c["detected"], c
    assert c["violations_before_trigger"] == 0, c
    assert 0 <= c["detection_step"] - c["trigger_step"] <= 1, c
for name in noticed:
    c = by_name[name]
    assert c["noticed"] and c["violations_buggy"] == 0, c
    assert 0 <= c["notice_step"] - c["trigger_step"] <= 1, c
    assert c["notices_fixed"] == 0, c
# The trigger is each buggy twin's own log's.
for c in cases:
    logs = glob.glob(os.path.join(sys.argv[2], "case*-" + c["script"][:-3] + "-buggy.json"))
    assert len(logs) == 1, (c["script"], logs)
    truth = json.load(open(logs[0]))
    assert truth["trigger_step"] == c["trigger_step"], (truth["trigger_step"], c)
print("{} of {} cases flagged at their trigger ({} more said as a notice), none on the fixed "
      "twins or the {} healthy programs ({} rules)".format(
          summary["detected"], summary["cases"], summary["noticed"], len(healthy),
          summary["rules"]))
PY
