#!/bin/bash
# A PyTorch CPU training script (Debian's torch 1.13): for every step its own
# log says it ran, the trace holds the optimizer's zero_grad and step scopes
# (seen through torch's record_function, though they never leave Python),
# the backward pass as a scope of its own (the autograd engine's execute(),
# from its entry to its return, within the script's own loss.backward()
# call), one Module call per module
# invocation the script's hooks counted, named by the module's class
# (Linear, ReLU, the model's own) in the order the hooks saw, the step
# (advanced by the step marker) and the stage (train, or eval in the eval
# phase every few steps, from Module.training) the script logged, the
# optimizer's primitive arguments, the callers of the model's call, rank and
# world size. Then the same with other step markers, and per rank for 2-rank
# DistributedDataParallel over gloo. A caller the recorder could no longer
# read (the script ended before it caught up) may stand as <unreadable>, but
# only as many as the recorder's closing notice counts.
source "$(dirname "$0")/lib.sh"
torch_stack
WORKLOADS="$ROOT/tests/workloads/python"
# check TRACE_JSONL MARKER_CALL LOG...: MARKER_CALL is the logged call whose end advances the step;
# $SCRATCH/record.err holds what the recorder said.
check() {
	RECORD_ERR="$SCRATCH/record.err" python3 - "$@" <<'PY' || fail "the trace differs from the script's log"
import collections, json, os, re, sys
trace_all = [json.loads(l) for l in open(sys.argv[1])]
UNREADABLE = "<unreadable>"
warnings = open(os.environ["RECORD_ERR"]).read()
said = re.search(r"(\d+) callers in the Python stacks", warnings)
unreadable = sum(frame == UNREADABLE for t in trace_all for frame in t.get("py_stack", []))
assert unreadable <= (int(said.group(1)) if said else 0), (unreadable, warnings)
marker_call = sys.argv[2]
CALL_IMPL = "torch.nn.modules.module.Module._call_impl"
for log_path in sys.argv[3:]:
    log = sorted((json.loads(l) for l in open(log_path)), key=lambda r: r.get("seq", 1 << 62))
    pid = next(r["pid"] for r in log if "pid" in r)
    # The Python side (a DDP job's gloo collectives are calls of their own: test_gloo_diagnosis).
    trace = [t for t in trace_all if t["pid"] == pid and t["kind"] in ("py", "torch_scope", "torch_op")]
    summary = log[-1]
    assert summary["kind"] == "summary", log_path
    # The step as the tracer counts it: marker calls begun before this record.
    step_of, markers = {}, 0
    for r in log:
        if r.get("kind") == "summary":
            continue
        step_of[r["seq"]] = markers
        if r.get("kind") == "api" and r["call"] == marker_call:
            markers += 1
    in_loop = [r for r in log if r.get("kind") in ("api", "module") and r.get("step") is not None]
    steps = sorted({step_of[r["seq"]] for r in in_loop})
    assert len(steps) >= 3, "the script logged too few steps"
    stages_seen = set()
    for step in steps:
        records = [r for r in in_loop if step_of[r["seq"]] == step]
        want_scopes = collections.Counter(r["scope"] for r in records if r["kind"] == "api" and r["scope"])
        got_scopes = collections.Counter(t["name"] for t in trace
                                         if t["kind"] == "torch_scope" and t["step"] == step)
        assert want_scopes == got_scopes, (log_path, step, dict(want_scopes), dict(got_scopes))
        # Each scope within the call the script timed around it (one monotonic clock).
        for r in records:
            if r["kind"] != "api" or not r["scope"]:
                continue
            inside = [t for t in trace if t["kind"] == "torch_scope" and t["name"] == r["scope"]
                      and r["ts_ns"] <= t["ts_ns"] and t["ts_ns"] + t["dur_ns"] <= r["end_ns"]]
            assert len(inside) == 1, (log_path, step, r["call"], len(inside))
            # The backward pass ends where the engine returns: a duration, inside the call.
            if r["scope"].startswith("Autograd.backward#"):
                assert inside[0]["dur_ns"] > 0, (log_path, step, inside[0])
        # Module calls per stage: the module's own training flag, as its hook saw it.
        want_modules = collections.Counter("train" if r["training"] else "eval" for r in records
                                           if r["kind"] == "module" and r["phase"] == "enter")
        got_modules = collections.Counter(t["stage"] for t in trace if t["kind"] == "py"
                                          and t["step"] == step and t["name"] == CALL_IMPL)
        assert want_modules == got_modules, (log_path, step, dict(want_modules), dict(got_modules))
        # Each module call names its module's class (its type's __name__), in
        # the order the script's pre-hooks saw the modules entered.
        want_classes = [r["class"].rsplit(".", 1)[-1] for r in records
                        if r["kind"] == "module" and r["phase"] == "enter"]
        got_classes = [t["args"].get("module") for t in sorted(trace, key=lambda t: t["ts_ns"])
                       if t["kind"] == "py" and t["step"] == step and t["name"] == CALL_IMPL]
        assert want_classes == got_classes, (log_path, step, want_classes, got_classes)
        stages_seen |= set(want_modules)
    assert stages_seen == {"train", "eval"}, (log_path, stages_seen)
    # Module calls nest inside the model's call: those whose callers include a
    # module call (the inner ones) lie within an outer one, on the same thread.
    # (Depth counts only frames entered from C, which varies as CPython 3.13
    # specialises its call sites, so the callers decide.)
    calls = [t for t in trace if t["name"] == CALL_IMPL]
    outer = [t for t in calls if not any(f.startswith(CALL_IMPL) for f in t["py_stack"])]
    for inner in calls:
        if inner in outer:
            continue
        assert any(o["ts_ns"] <= inner["ts_ns"] and inner["ts_ns"] + inner["dur_ns"] <= o["ts_ns"] + o["dur_ns"]
                   for o in outer if o["tid"] == inner["tid"]), inner
    # The model's calls, in order: called from where the script says it called them.
    model_calls = [r for r in log if r.get("kind") == "api" and r["call"].startswith("model(")]
    assert len(model_calls) == len(outer), (log_path, len(model_calls), len(outer))
    # torch 2.x enters Module._call_impl through Module._wrapped_call_impl, its
    # __call__: the script's callers start after torch's own frames.
    for record, event in zip(model_calls, sorted(outer, key=lambda t: t["ts_ns"])):
        stack = list(event["py_stack"])
        while stack and stack[0].startswith("torch.nn.modules.module.Module."):
            stack.pop(0)
        assert len(stack) == len(record["callers"]), (event["py_stack"], record["callers"])
        for name, logged in zip(stack, record["callers"]):
            assert name == UNREADABLE or name.endswith("." + logged), (event["py_stack"], record["callers"])
    # Primitive arguments of the optimizer's construction (entered from C: type call).
    for record in (r for r in log if r.get("kind") == "api" and r["args"] and r["api"].endswith(".__init__")):
        events = [t for t in trace if t["kind"] == "py" and t["name"] == record["api"]]
        assert len(events) == 1, (record["api"], len(events))
        for name, value in record["args"].items():
            assert events[0]["args"].get(name) == value, (record["api"], name, value, events[0]["args"])
    # Meta variables on every event; the stage's own probe leaves no event behind.
    environment_rank = summary["world_size"] > 1
    for t in trace:
        assert t["rank"] == (summary["rank"] if environment_rank else None), t
        assert t["world_size"] == (summary["world_size"] if environment_rank else None), t
        assert not t["name"].endswith("Module.__setattr__"), t
    print(f"{log_path}: {len(steps)} steps: scopes, module calls and classes, stages, steps, callers and arguments match")
PY
}
# check_hits TRACE_JSONL LOG...: the recorder's closing "probe hits a step"
# line agrees with the trace: its records of each kind from step 1 on, over
# the steps they reached per process, which the scripts' logs bound (a run
# of N steps reaches step N-1, or N where work follows the last step).
check_hits() {
	RECORD_ERR="$SCRATCH/record.err" python3 - "$@" <<'PY' || fail "the probe hits a step differ from the trace"
import collections, json, os, re, sys
said = re.search(r"probe hits a step: ([\d.]+) over (\d+) steps \(([\d.]+) NCCL calls, ([\d.]+) "
                 r"Python calls, ([\d.]+) torch scopes, ([\d.]+) operators",
                 open(os.environ["RECORD_ERR"]).read())
assert said, open(os.environ["RECORD_ERR"]).read()
trace = [json.loads(l) for l in open(sys.argv[1])]
reached, kinds = collections.Counter(), collections.Counter()
for t in trace:
    if t.get("step") is not None and t["step"] >= 1:
        reached[t["pid"]] = max(reached[t["pid"]], t["step"])
        kinds[t["kind"]] += 1
steps = sum(reached.values())
assert int(said.group(2)) == steps, (said.group(0), dict(reached))
logged = 0
for log_path in sys.argv[2:]:
    summary = [json.loads(l) for l in open(log_path)][-1]
    assert reached[summary["pid"]] in (summary["steps"] - 1, summary["steps"]), (summary, dict(reached))
    logged += summary["steps"]
assert len(reached) == len(sys.argv) - 2, dict(reached)
want = [sum(kinds.values()), kinds["nccl"], kinds["py"], kinds["torch_scope"], kinds["torch_op"]]
got = [float(said.group(i)) for i in (1, 3, 4, 5, 6)]
assert all(abs(g - w / steps) <= 0.05 for g, w in zip(got, want)), (said.group(0), want, steps)
print(f"probe hits a step: {got[0]} over {steps} steps ({logged} logged) agree with the trace")
PY
}
# -v: the recorder's closing count of <unreadable> callers is said with -v only.
run_cpu() {
	rm -f "$SCRATCH/train.trace" # record refuses to replace a trace
	"$TCHECK" -v record -o "$SCRATCH/train.trace" --python "$@" -- $TORCH_PYTHON \
		"$WORKLOADS/train_cpu.py" --steps 7 --eval-every 3 --log "$SCRATCH/train.jsonl" \
		>/dev/null 2>"$SCRATCH/record.err" || fail "record failed: $(cat "$SCRATCH/record.err")"
	"$TCHECK" dump "$SCRATCH/train.trace" --calls-only >"$SCRATCH/calls.jsonl"
}
run_cpu
check "$SCRATCH/calls.jsonl" "optimizer.step()" "$SCRATCH/train.jsonl"
check_hits "$SCRATCH/calls.jsonl" "$SCRATCH/train.jsonl"
run_cpu --step-marker "Optimizer.zero_grad#"
check "$SCRATCH/calls.jsonl" "optimizer.zero_grad()" "$SCRATCH/train.jsonl"
# A Python function as the marker: seen where it is entered from C (CPython
# 3.11's CALL_FUNCTION_EX in torch 1.13's optimizer wrappers); CPython 3.13
# calls it from Python without leaving the evaluator, and the recorder says
# that its marker matched nothing.
run_cpu --step-marker torch.optim.sgd.SGD.step
if [ "$TORCH_STACK" = torch-1.13 ]; then
	check "$SCRATCH/calls.jsonl" "optimizer.step()" "$SCRATCH/train.jsonl"
else
	grep -q "the step marker 'torch.optim.sgd.SGD.step' matched no call or torch scope" \
		"$SCRATCH/record.err" || fail "a step marker that never matched was not said: $(cat "$SCRATCH/record.err")"
fi
"$TCHECK" -v record -o "$SCRATCH/ddp.trace" --python -- $TORCH_PYTHON \
	"$WORKLOADS/train_ddp.py" --world-size 2 --steps 5 --eval-every 2 \
	--log-dir "$SCRATCH/ddp" >/dev/null 2>"$SCRATCH/record.err" ||
	fail "record of the DDP job failed: $(cat "$SCRATCH/record.err")"
"$TCHECK" dump "$SCRATCH/ddp.trace" --calls-only >"$SCRATCH/ddp.jsonl"
check "$SCRATCH/ddp.jsonl" "optimizer.step()" "$SCRATCH/ddp/rank-0.jsonl" "$SCRATCH/ddp/rank-1.jsonl"
check_hits "$SCRATCH/ddp.jsonl" "$SCRATCH/ddp/rank-0.jsonl" "$SCRATCH/ddp/rank-1.jsonl"

# Selected torch operators (--torch-op): SGD with momentum updates every
# parameter tensor inside Optimizer.step (param.add_ each step; from the
# second step also the momentum buffer's mul_ and add_), and zero_grad zeroes
# every gradient once one exists where set_to_none is off by default (torch
# 1.13; torch 2.x drops the gradients instead). The parameter count is the script's own.
"$TCHECK" --quiet record -o "$SCRATCH/ops.trace" --torch-op add_ --torch-op mul_ \
	--torch-op zero_ -- $TORCH_PYTHON "$ROOT/tests/workloads/python/train_cpu.py" \
	--steps 4 --log "$SCRATCH/ops.jsonl" >/dev/null || fail "record with --torch-op failed"
"$TCHECK" dump "$SCRATCH/ops.trace" --calls-only >"$SCRATCH/ops-calls.jsonl"
# torch 2.x drops gradients in zero_grad (set_to_none=True): no zero_ then.
set_to_none=$($TORCH_PYTHON -c 'import inspect, torch
print(inspect.signature(torch.optim.Optimizer.zero_grad).parameters["set_to_none"].default)') ||
	fail "cannot read zero_grad's default from this torch"
SET_TO_NONE=$set_to_none python3 - "$SCRATCH/ops-calls.jsonl" "$SCRATCH/ops.jsonl" <<'PY' || fail "operators do not nest in their scopes as the script's parameters say"
import collections, json, os, sys
trace = [json.loads(l) for l in open(sys.argv[1])]
log = [json.loads(l) for l in open(sys.argv[2])]
summary = next(r for r in log if r.get("kind") == "summary")
tensors, steps = summary["parameter_tensors"], summary["steps"]
assert tensors > 0 and steps == 4, summary
ops = [t for t in trace if t["kind"] == "torch_op"]
assert {t["name"] for t in ops} >= {"aten::add_.Tensor", "aten::mul_.Tensor", "aten::zero_"}, {t["name"] for t in ops}
def inside(scope_prefix, step):
    scopes = [t for t in trace if t["kind"] == "torch_scope" and t["step"] == step
              and t["name"].startswith(scope_prefix)]
    assert len(scopes) == 1, (scope_prefix, step, scopes)
    s = scopes[0]
    return collections.Counter(o["name"] for o in ops if o["tid"] == s["tid"] and o["step"] == step
                               and s["ts_ns"] <= o["ts_ns"] and o["ts_ns"] + o["dur_ns"] <= s["ts_ns"] + s["dur_ns"])
for step in range(steps):
    updates = inside("Optimizer.step#", step)
    momentum = 0 if step == 0 else tensors
    want = {"aten::add_.Tensor": tensors + momentum, "aten::mul_.Tensor": momentum}
    assert {k: updates[k] for k in want} == want, (step, dict(updates), want)
    zeroing = inside("Optimizer.zero_grad#", step)
    zeroed = 0 if step == 0 or os.environ["SET_TO_NONE"] == "True" else tensors
    assert zeroing["aten::zero_"] == zeroed, (step, dict(zeroing), zeroed)
print(f"{steps} steps, {tensors} parameter tensors: updates in every step, zeroing in every zero_grad")
PY

# An operator this torch does not have is named in a warning; the scopes are still followed.
"$TCHECK" --quiet record -o "$SCRATCH/bad-op.trace" --torch-op no_such_operator_ -- \
	$TORCH_PYTHON "$ROOT/tests/workloads/python/train_cpu.py" --steps 2 \
	>/dev/null 2>"$SCRATCH/bad-op.err" || fail "record with an unknown --torch-op failed"
grep -q "no ATen operator no_such_operator_" "$SCRATCH/bad-op.err" ||
	fail "no warning names the unknown operator: $(cat "$SCRATCH/bad-op.err")"
[ "$("$TCHECK" dump "$SCRATCH/bad-op.trace" --calls-only | grep -c '"kind": *"torch_scope", *"name": *"Optimizer\.')" -eq 4 ] ||
	fail "with an unknown operator the 2 steps' 4 optimizer scopes were not all traced"
[ "$("$TCHECK" dump "$SCRATCH/bad-op.trace" --calls-only | grep -c '"name": *"Autograd\.backward#')" -eq 2 ] ||
	fail "with an unknown operator the 2 steps' backward passes were not both traced"
