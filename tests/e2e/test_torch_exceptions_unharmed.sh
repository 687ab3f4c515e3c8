#!/bin/bash
# The traced process is never harmed by the probes on C++ functions: a torch
# program whose backward pass and an in-place operator throw C++ exceptions
# it catches prints, traced with record --python, exactly what it prints
# untraced and exits 0 (a return probe on either function broke the
# exceptions' unwinding and aborted it; the probes on the backward pass's
# return instructions do not); the trace still holds the backward passes, the
# one the exception left without an end (counted), and the operators, with
# their tensor and scalar.
source "$(dirname "$0")/lib.sh"
torch_stack
SCRIPT="$ROOT/tests/workloads/python/caught_exceptions.py"
$TORCH_PYTHON "$SCRIPT" >"$SCRATCH/untraced.out" 2>&1 || fail "untraced run failed: $(cat "$SCRATCH/untraced.out")"
"$TCHECK" record -o "$SCRATCH/t.trace" --python -- $TORCH_PYTHON "$SCRIPT" \
	>"$SCRATCH/traced.out" 2>"$SCRATCH/record.err" ||
	fail "traced run failed: $(cat "$SCRATCH/traced.out" "$SCRATCH/record.err")"
diff -u "$SCRATCH/untraced.out" "$SCRATCH/traced.out" || fail "traced output differs from untraced"
grep -q "backward: caught True" "$SCRATCH/traced.out" || fail "the backward exception was not caught"
if grep -q "crash:" "$SCRATCH/record.err"; then fail "a crash was reported: $(cat "$SCRATCH/record.err")"; fi
grep -q "1 backward passes have no end in the trace" "$SCRATCH/record.err" ||
	fail "the backward pass the exception left was not counted: $(cat "$SCRATCH/record.err")"
"$TCHECK" dump --calls-only "$SCRATCH/t.trace" >"$SCRATCH/calls.jsonl"
python3 - "$SCRATCH/calls.jsonl" <<'PY' || fail "the trace lacks the backward passes or the operators"
import json, sys
calls = [json.loads(line) for line in open(sys.argv[1])]
backward = sorted((c for c in calls if c["name"] == "Autograd.backward#Engine.execute"),
                  key=lambda c: c["ts_ns"])
# The one that raised and the training step's: the exception left the first by
# no return instruction (no end, recorded at its start); the second returned.
assert len(backward) == 2, len(backward)
assert backward[0]["dur_ns"] == 0 and backward[1]["dur_ns"] > 0, backward
updates = [c for c in calls if c["kind"] == "torch_op" and c["name"] == "aten::add_.Tensor"]
# The refused add_ and the optimizer's update (alpha = -lr), each with its tensor.
assert any(c["args"].get("arg:alpha") == -0.25 for c in updates), updates
assert all(c["args"].get("tensor:self") for c in updates), updates
print(f"{len(backward)} backward passes, {len(updates)} add_ calls; output as untraced")
PY
