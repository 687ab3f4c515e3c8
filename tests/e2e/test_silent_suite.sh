#!/bin/bash
# The silent-error suite end to end (tools/eval/silent_eval.py, as `make
# eval-silent` runs it): rules inferred from healthy reference runs flag
# every buggy variant within one step of the trigger the workloads' own logs
# show, and nothing on any fixed variant. Asserted here on the driver's
# results against the logs it kept.
source "$(dirname "$0")/lib.sh"
torch_stack
status=0
python3 "$ROOT/tools/eval/silent_eval.py" --tcheck "$TCHECK" --work "$SCRATCH/suite" --python "$TORCH_PYTHON" \
	--results "$SCRATCH/results.json" >"$SCRATCH/suite.txt" 2>&1 || status=$?
[ "$status" = 0 ] || fail "suite exited $status: $(cat "$SCRATCH/suite.txt")"
python3 - "$SCRATCH/results.json" "$SCRATCH/suite" <<'PY' || fail "results: $(cat "$SCRATCH/suite.txt")"
import json, os, sys
results = json.load(open(sys.argv[1]))
work = sys.argv[2]
assert len(results) >= 8, len(results)
for r in results:
    assert r["detected"], r
    assert r["violations_fixed"] == 0, r
    assert r["violations_before_trigger"] == 0, r
    assert r["trigger_step"] is not None and 0 <= r["detection_step"] - r["trigger_step"] <= 1, r
# The one-process cases' truth, read again: the step the script says its bug began.
for index, r in enumerate(results):
    log = os.path.join(work, "case{}-buggy.json".format(index))
    if r["family"] == "torch-cpu" and os.path.exists(log):
        truth = json.load(open(log))
        assert truth["trigger_step"] == r["trigger_step"], (truth["trigger_step"], r)
        assert truth["bug"] != "none"
# Every relation the suite relies on caught something.
caught = {relation for r in results for relation in r["relations"]}
assert {"Consistent", "APIArg", "APISequence", "EventContain"} <= caught, caught
PY

# Live: the suite's one-process rules while recording, an EventContain violation printed as the
# frozen layer's optimizer step ends, at the step the script's log names.
"$TCHECK" --quiet record -o "$SCRATCH/live.trace" --rules "$SCRATCH/suite/torch-cpu-rules.json" \
	--torch-op add_ --torch-op mul_ --python-filter torch.optim.sgd.SGD.__init__ -- \
	$TORCH_PYTHON "$ROOT/tests/workloads/python/silent_errors.py" --bug frozen --steps 10 \
	--log "$SCRATCH/live.json" >"$SCRATCH/live.txt" || fail "live run"
python3 - "$SCRATCH/live.txt" "$SCRATCH/live.json" <<'PY' || fail "live: $(cat "$SCRATCH/live.txt")"
import json, re, sys
steps = [int(m.group(1)) for m in re.finditer(r"^violation at step (\d+): every (?:step|Optimizer\.step#\*) contains",
                                               open(sys.argv[1]).read(), re.M)]
truth = json.load(open(sys.argv[2]))
frozen = [s["step"] for s in truth["steps"] if s["frozen_layers"]]
assert steps and min(steps) == frozen[0] == truth["trigger_step"], (steps, frozen)
assert set(steps) <= set(frozen), (steps, frozen)
PY
echo "every silent error of the suite flagged within one step of its trigger, none on the fixed variants"
