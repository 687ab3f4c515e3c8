#!/bin/bash
# record --pid on a CPU training script already in its training loop: every
# torch scope in the trace is one the script's own log says it ran (a scope
# whose beginning came before the probes is not invented), every scoped call
# the script made between the first and the last scope seen is in the trace
# (nothing after attach is lost), scopes sit at depth 0, the step counts
# from attach and moves with the script's own step, every module call the
# script's hooks logged in that window is traced at its step, and each update
# scope holds the script's parameter count of operator calls. On torch 2.6 the
# script runs chrooted: record --pid on a chrooted process.
# e2e-alone: every scoped call after the attach must be in the trace
source "$(dirname "$0")/lib.sh"
torch_stack
$TORCH_PYTHON "$ROOT/tests/workloads/python/train_cpu.py" --steps 250 --step-sleep-ms 20 \
	--progress "$SCRATCH/progress" --log "$SCRATCH/train.jsonl" >/dev/null &
trainer=$!
BACKGROUND_PIDS+=("$trainer")
deadline=$((SECONDS + 120))
until [ "$(cat "$SCRATCH/progress" 2>/dev/null || echo -1)" -ge 5 ]; do
	[ $SECONDS -lt $deadline ] || fail "the training script did not reach step 5"
	sleep 0.1
done
"$TCHECK" --quiet record -o "$SCRATCH/attach.trace" --pid "$trainer" --python \
	--torch-op add_ --torch-op mul_ --duration 3 || fail "record --pid failed"
wait "$trainer" || fail "the training script failed after the tracer detached"
"$TCHECK" dump "$SCRATCH/attach.trace" --calls-only >"$SCRATCH/calls.jsonl"
python3 - "$SCRATCH/calls.jsonl" "$SCRATCH/train.jsonl" <<'PY' || fail "the mid-run trace differs from the script's log"
import collections, json, sys
trace = [json.loads(l) for l in open(sys.argv[1])]
log = [json.loads(l) for l in open(sys.argv[2])]
summary = next(r for r in log if r.get("kind") == "summary")
tensors = summary["parameter_tensors"]
scoped = [r for r in log if r.get("kind") == "api" and r.get("scope")]
scopes = sorted((t for t in trace if t["kind"] == "torch_scope"), key=lambda t: t["ts_ns"])
assert len(scopes) >= 10, f"only {len(scopes)} scopes seen in 3 s of training"
first_step_logged = min(r["step"] for r in scoped)
# The script and the probes read the same monotonic clock: a scope lies in its call.
matches = []
for s in scopes:
    calls = [r for r in scoped if r["scope"] == s["name"] and r["ts_ns"] <= s["ts_ns"]
             and s["ts_ns"] + s["dur_ns"] <= r["end_ns"]]
    assert len(calls) == 1, ("a scope the script did not run, or ran twice", s, calls)
    assert s["depth"] == 0, ("a scope nested under one whose start was not seen", s)
    matches.append((s, calls[0]))
assert scopes[0]["ts_ns"] > min(r["ts_ns"] for r in scoped), "the trace began before the script"
window_start, window_end = matches[0][1]["ts_ns"], matches[-1][1]["end_ns"]
inside = [r for r in scoped if window_start <= r["ts_ns"] and r["end_ns"] <= window_end]
assert len(inside) == len(scopes), ("scoped calls lost after attach", len(inside), len(scopes))
# The step counts from attach; it moves with the script's.
offsets = {call["step"] - s["step"] for s, call in matches}
assert len(offsets) == 1, offsets
offset = offsets.pop()
assert offset > first_step_logged, offset
# Module calls in that window: one per invocation the script's hooks logged, each
# at the script's step (less the steps before attach).
CALL_IMPL = "torch.nn.modules.module.Module._call_impl"
logged_modules = collections.Counter(r["step"] for r in log if r.get("kind") == "module"
                                     and r["phase"] == "enter"
                                     and window_start <= r["ts_ns"] <= window_end)
traced_modules = collections.Counter(t["step"] + offset for t in trace if t["name"] == CALL_IMPL
                                     and window_start <= t["ts_ns"]
                                     and t["ts_ns"] + t["dur_ns"] <= window_end)
assert logged_modules and logged_modules == traced_modules, (dict(logged_modules), dict(traced_modules))
ops = [t for t in trace if t["kind"] == "torch_op"]
for s, call in matches:
    if not s["name"].startswith("Optimizer.step#"):
        continue
    held = collections.Counter(o["name"] for o in ops if o["tid"] == s["tid"] and s["ts_ns"] <= o["ts_ns"]
                               and o["ts_ns"] + o["dur_ns"] <= s["ts_ns"] + s["dur_ns"])
    assert held["aten::add_.Tensor"] == 2 * tensors and held["aten::mul_.Tensor"] == tensors, (call["step"], held)
print(f"{len(scopes)} scopes and {sum(traced_modules.values())} module calls from step "
      f"{matches[0][1]['step']} on: none invented, none lost")
PY
