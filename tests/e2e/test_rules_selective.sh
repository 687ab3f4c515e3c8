#!/bin/bash
# Selective instrumentation: with --rules and no Python options, record
# traces exactly the Python functions, scopes and torch operators the rules
# are about (the rules file is the truth; a ScalarsSteady rule adds the
# code of torch.optim: its schedulers, and optimizers built or loaded), nothing of the default
# selection; rules about NCCL calls only leave Python untraced.
source "$(dirname "$0")/lib.sh"
torch_stack
PY="$ROOT/tests/workloads/python"
"$TCHECK" --quiet record -o "$SCRATCH/reference.trace" --torch-op add_ \
	--python-filter torch.optim.sgd.SGD.__init__ -- $TORCH_PYTHON "$PY/train_cpu.py" \
	--steps 6 >/dev/null || fail "reference run"
"$TCHECK" --quiet infer -o "$SCRATCH/rules.json" "$SCRATCH/reference.trace" || fail "infer"

# The rules alone choose the probes (the default selection would add
# Module._call_impl, the optimizers' methods and more).
"$TCHECK" -v record -o "$SCRATCH/checked.trace" --rules "$SCRATCH/rules.json" -- \
	$TORCH_PYTHON "$PY/train_cpu.py" --steps 6 --seed 9 >"$SCRATCH/checked.txt" \
	2>"$SCRATCH/checked.log" || fail "healthy run checked: $(cat "$SCRATCH/checked.txt")"
grep -q "Python is traced" "$SCRATCH/checked.log" || fail "no selection said: $(cat "$SCRATCH/checked.log")"
"$TCHECK" dump --calls-only "$SCRATCH/checked.trace" >"$SCRATCH/checked.jsonl"
python3 - "$SCRATCH/rules.json" "$SCRATCH/checked.jsonl" <<'PY' || fail "the probes are not the rules' own"
import json, sys
rules = json.load(open(sys.argv[1]))["rules"]
named = {r[k]["name"] for r in rules for k in ("event", "first", "child")
         if k in r and r[k]["kind"] == "python"}
operators = {n for n in named if n.startswith("aten::")}
functions = {n for n in named if "#" not in n and not n.startswith("aten::")}
assert operators, named
seen = {}
for line in open(sys.argv[2]):
    call = json.loads(line)
    if call["kind"] in ("py", "torch_scope", "torch_op"):
        seen[call["name"]] = (call["kind"], seen.get(call["name"], (0, 0))[1] + 1)
# Every operator and function the rules are about was traced...
assert operators <= set(seen), (operators, seen)
assert functions <= set(seen), (functions, seen)
# ...and no Python function beyond them (scopes come with Python tracing), but
# for torch.optim's code a ScalarsSteady rule follows (schedulers, optimizers
# built or loaded).
followed = "torch.optim."
steady = any(r["relation"] == "ScalarsSteady" for r in rules)
extra = {n for n, (kind, _) in seen.items() if kind == "py"} - functions
extra = {n for n in extra if not (steady and n.startswith(followed))}
assert not extra, extra
print(f"{len(operators)} operator(s), {len(functions)} function(s) traced, {sum(n for _, n in seen.values())} events")
PY

# Rules about NCCL calls only: no Python probes on a Python process.
"$TCHECK" -v record -o "$SCRATCH/nccl.trace" --rules "$ROOT/rules/nccl-parallel.json" -- \
	$TORCH_PYTHON "$PY/train_cpu.py" --steps 2 >/dev/null 2>"$SCRATCH/nccl.log" ||
	fail "run under NCCL rules: $(cat "$SCRATCH/nccl.log")"
grep -q "Python is not traced" "$SCRATCH/nccl.log" || fail "$(cat "$SCRATCH/nccl.log")"
if "$TCHECK" dump --calls-only "$SCRATCH/nccl.trace" | grep -Eq '"kind":"(py|torch_scope|torch_op)"'; then
	fail "Python calls traced under rules about NCCL only"
fi
echo "the rules chose the probes: their functions and operators, nothing more"
