#!/bin/bash
# Deploy mode on torch-level rules: 'infer --torch-level' keeps the rules
# checked on torch scopes, the backward pass and operators, and record
# --rules then follows Python through torch's probes only (no frame-evaluator
# probe, no Python call in the trace). Live, such rules must find what the
# same rules find offline in a full --python recording of the same case:
# the same findings on silent-error cases (the workload's log names the
# bug's first step) and the same zero on a healthy program.
source "$(dirname "$0")/lib.sh"
torch_stack
PY="$ROOT/tests/workloads/python"
"$TCHECK" --quiet record -o "$SCRATCH/reference.trace" --python -- $TORCH_PYTHON \
	"$PY/silent_errors.py" --steps 10 --log "$SCRATCH/reference.json" >/dev/null ||
	fail "reference run"
"$TCHECK" --quiet infer --torch-level -o "$SCRATCH/rules.json" "$SCRATCH/reference.trace" ||
	fail "infer --torch-level"
"$TCHECK" check --rules "$SCRATCH/rules.json" --probes >"$SCRATCH/probes.txt" ||
	fail "check --probes"
grep -q "frame evaluator: not needed" "$SCRATCH/probes.txt" || fail "$(cat "$SCRATCH/probes.txt")"
# The full rules of the same reference name Python functions: the evaluator is needed.
"$TCHECK" --quiet infer -o "$SCRATCH/full.json" "$SCRATCH/reference.trace" || fail "infer"
"$TCHECK" check --rules "$SCRATCH/full.json" --probes | grep -q "frame evaluator: needed by" ||
	fail "full rules: the evaluator not said to be needed"

for bug in frozen zero-grad none; do
	"$TCHECK" --quiet record -o "$SCRATCH/$bug-full.trace" --python -- $TORCH_PYTHON \
		"$PY/silent_errors.py" --bug "$bug" --steps 10 --seed 9 \
		--log "$SCRATCH/$bug-full.json" >/dev/null || fail "$bug: --python run"
	status=0
	"$TCHECK" check --rules "$SCRATCH/rules.json" "$SCRATCH/$bug-full.trace" \
		>"$SCRATCH/$bug-offline.txt" 2>/dev/null || status=$?
	[ "$status" -le 1 ] || fail "$bug: offline check exited $status"
	"$TCHECK" -v record -o "$SCRATCH/$bug-live.trace" --rules "$SCRATCH/rules.json" -- \
		$TORCH_PYTHON "$PY/silent_errors.py" --bug "$bug" --steps 10 --seed 9 \
		--log "$SCRATCH/$bug-live.json" >"$SCRATCH/$bug-live.txt" 2>"$SCRATCH/$bug-live.log" ||
		fail "$bug: live run: $(tail -5 "$SCRATCH/$bug-live.log")"
	grep -q "through torch's probes only" "$SCRATCH/$bug-live.log" ||
		fail "$bug: not torch-level: $(cat "$SCRATCH/$bug-live.log")"
	if grep -q "frame evaluator in" "$SCRATCH/$bug-live.log"; then
		fail "$bug: the frame evaluator was probed"
	fi
	"$TCHECK" dump --calls-only "$SCRATCH/$bug-live.trace" >"$SCRATCH/$bug-live.jsonl"
	python3 - "$bug" "$SCRATCH/$bug-offline.txt" "$SCRATCH/$bug-live.txt" \
		"$SCRATCH/$bug-live.json" "$SCRATCH/$bug-live.jsonl" <<'PY' || fail "$bug: live and offline differ"
import json, re, sys
bug, offline, live, truth, calls = sys.argv[1:]
def findings(path):
    return sorted(l for l in open(path).read().splitlines() if l.startswith("finding:"))
offline, live = findings(offline), findings(live)
assert offline == live, (offline, live)
kinds = {json.loads(l)["kind"] for l in open(calls)}
assert "py" not in kinds and {"torch_scope", "torch_op"} <= kinds, kinds
truth = json.load(open(truth))
if bug == "none":
    assert not live, live
else:
    # Each finding starts at the step the workload's log says its bug began.
    assert live, bug
    firsts = {int(m.group(1)) for l in live for m in [re.search(r"first at step (\d+)", l)]}
    assert firsts == {truth["trigger_step"]}, (firsts, truth["trigger_step"])
print(f"{bug}: {len(live)} finding(s) live, the same offline")
PY
done
echo "torch-level rules: live without the frame evaluator finds what the full recording shows"
