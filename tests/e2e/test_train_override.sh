#!/bin/bash
# A module call carries module_train_not_run where its class overrides train() and no
# train() or eval() has reached it since the tracer saw it built (TrainOverrideRan's
# reading, docs/trace-format.md). The truth is the workload's own log: a classifier whose
# backbone's class freezes its first stage in train(self, mode), the classifier and its head
# inheriting nn.Module.train(); model.train() called never, before the first step, or at
# step 3, the log saying by which step it ran. Recorded from the start: the backbone's calls
# carry it exactly in the steps before model.train() ran (it reaches the backbone through
# Module.train's recursion), no other module's call ever does. Attached mid-run to a
# program that never calls train(): no call carries it, since an earlier train() is not
# known for a module the tracer did not see built.
source "$(dirname "$0")/lib.sh"
torch_stack
script="$ROOT/tests/workloads/python/train_override.py"
for when in never before 3; do
	"$TCHECK" --quiet record -o "$SCRATCH/$when.trace" --python -- $TORCH_PYTHON "$script" \
		--call-train "$when" --log "$SCRATCH/$when.jsonl" >/dev/null 2>"$SCRATCH/record.err" ||
		fail "record failed: $(cat "$SCRATCH/record.err")"
	"$TCHECK" dump "$SCRATCH/$when.trace" --calls-only >"$SCRATCH/$when.calls" ||
		fail "dump failed"
done
python3 - "$SCRATCH" <<'PY' || fail "module_train_not_run differs from the workload's log (above)"
import json, os, sys
CALL_IMPL = "torch.nn.modules.module.Module._call_impl"
for when in ("never", "before", "3"):
    log = [json.loads(line) for line in open(os.path.join(sys.argv[1], when + ".jsonl"))]
    overriding = log[0]["overriding"]
    not_run_steps = {r["step"] for r in log if r["kind"] == "step" and not r["train_called"]}
    calls = [json.loads(line) for line in open(os.path.join(sys.argv[1], when + ".calls"))]
    calls = [c for c in calls if c.get("name") == CALL_IMPL]
    backbone = [c for c in calls if c["args"].get("module") == overriding]
    assert len(backbone) == len(log) - 1, (when, len(backbone))
    for call in calls:
        said = call["args"].get("module_train_not_run", False)
        want = call in backbone and call["step"] in not_run_steps
        assert said == want, (when, call["step"], call["args"])
    print(f"call-train {when}: {sum(c['args'].get('module_train_not_run', False) for c in calls)}"
          f" of {len(calls)} module calls carry it, the backbone's in steps "
          f"{sorted(not_run_steps)}")
PY

# Paced, so that it still runs when the attach comes.
$TORCH_PYTHON "$script" --call-train never --steps 100000 --step-sleep-ms 5 \
	--log "$SCRATCH/long.jsonl" >/dev/null &
trainer=$!
BACKGROUND_PIDS+=("$trainer")
wait_for_lines "$SCRATCH/long.jsonl" 1 '"kind": "step"' 120
"$TCHECK" --quiet record -o "$SCRATCH/attach.trace" --pid "$trainer" --python --duration 2 ||
	fail "record --pid failed"
kill "$trainer" || fail "the workload ended before the attach did: $(tail -c 300 "$SCRATCH/long.jsonl")"
"$TCHECK" dump "$SCRATCH/attach.trace" --calls-only >"$SCRATCH/attach.calls" || fail "dump failed"
python3 - "$SCRATCH/attach.calls" <<'PY' || fail "a module the tracer did not see built was judged (above)"
import json, sys
calls = [c for c in map(json.loads, open(sys.argv[1]))
         if c.get("name") == "torch.nn.modules.module.Module._call_impl"]
backbone = [c for c in calls if c["args"].get("module") == "Backbone"]
assert len(backbone) >= 10, len(backbone)
said = [c for c in calls if "module_train_not_run" in c["args"]]
assert not said, said[:2]
print(f"attached mid-run: none of {len(calls)} module calls ({len(backbone)} of the backbone) carry it")
PY
