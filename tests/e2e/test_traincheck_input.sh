#!/bin/bash
# TrainCheck's own JSON Lines traces as input to infer and check: on the
# 2-rank excerpt of tests/traincheck/ (its README lists what holds by
# construction), the invariants built into it are learnt from the folder;
# the excerpt itself checks clean; a copy where rank 1 changes its learning
# rate at step 7 and rank 0 skips zero_grad at step 5 is flagged at those
# steps on those ranks; a corrupt line is named by file and line.
source "$(dirname "$0")/lib.sh"
EXCERPT="$ROOT/tests/traincheck/ddp-excerpt"

"$TCHECK" infer -o "$SCRATCH/rules.json" "$EXCERPT" 2>"$SCRATCH/infer.txt" ||
	fail "infer exited $? on the excerpt: $(cat "$SCRATCH/infer.txt")"
python3 - "$SCRATCH/rules.json" "$SCRATCH/infer.txt" "$EXCERPT" <<'PY' || fail "the rules lack an invariant built into the excerpt"
import glob, json, re, sys
rules = json.load(open(sys.argv[1]))["rules"]
# The reader's truth: one event per call (pre record) and per state change in the files.
records = [json.loads(line) for path in glob.glob(sys.argv[3] + "/trace_*.log") for line in open(path)]
calls = sum(r["type"] == "function_call (pre)" for r in records)
states = sum(r["type"] == "state_change" for r in records)
summary = open(sys.argv[2]).read()
assert re.search(r"\b%d events from" % (calls + states), summary), summary

def has(relation, name, field=None, value=None, first=None, unconditional=True):
    return any(r["relation"] == relation and r["event"]["name"] == name
               and (field is None or r.get("field") == field)
               and (value is None or r.get("value") == value)
               and (first is None or r.get("first", {}).get("name") == first)
               and (not unconditional or not r["precondition"]) for r in rules)

assert has("Consistent", "torch.optim.sgd.sgd", "arg:lr")
assert has("APIArg", "torch.optim.sgd.sgd", "arg:lr", "0.01")
assert has("Consistent", "state:model.fc.weight", "arg:data")
assert has("APIOutput", "torch.is_grad_enabled", "result", "True")
assert has("APISequence", "torch._tensor.Tensor.backward",
           first="torch.optim.optimizer.Optimizer.zero_grad")
# Each rank's loss and rank differ: never consistent across ranks.
assert not has("Consistent", "torch.distributed.distributed_c10d.get_rank", "result",
               unconditional=False)
PY

# The healthy excerpt against its own rules: no violation.
"$TCHECK" --quiet check --rules "$SCRATCH/rules.json" "$EXCERPT" >"$SCRATCH/healthy.txt" ||
	fail "check exited $? on the healthy excerpt: $(cat "$SCRATCH/healthy.txt")"

# Buggy copy: rank 1 (pid 4102) calls sgd with lr 0.1 at step 7; rank 0 (pid 4101) skips zero_grad at step 5.
mkdir "$SCRATCH/buggy"
python3 - "$EXCERPT" "$SCRATCH/buggy" <<'PY'
import glob, json, os, sys
for path in glob.glob(sys.argv[1] + "/trace_*.log"):
    out = open(os.path.join(sys.argv[2], os.path.basename(path)), "w")
    skipped = set()
    for line in open(path):
        r = json.loads(line)
        meta = r["meta_vars"]
        if r["process_id"] == 4102 and meta["step"] == 7 and r.get("function") == "torch.optim.sgd.sgd" \
                and "kwargs" in r:
            r["kwargs"]["lr"] = {"float": 0.1}
        if r["process_id"] == 4101 and meta["step"] == 5 and meta["stage"] == "training" \
                and r.get("function") == "torch.optim.optimizer.Optimizer.zero_grad":
            continue
        out.write(json.dumps(r) + "\n")
PY
status=0
"$TCHECK" --quiet check --rules "$SCRATCH/rules.json" --jsonl "$SCRATCH/buggy.jsonl" \
	"$SCRATCH/buggy" >"$SCRATCH/buggy.txt" || status=$?
[ "$status" = 1 ] || fail "check exited $status on the buggy copy, expected 1: $(cat "$SCRATCH/buggy.txt")"
python3 - "$SCRATCH/buggy.jsonl" <<'PY' || fail "the violations are not the injected ones: $(cat "$SCRATCH/buggy.txt")"
import json, sys
violations = [json.loads(line) for line in open(sys.argv[1])]
assert {v["step"] for v in violations} == {5, 7}, [(v["step"], v["invariant"]) for v in violations]
lr = [v for v in violations if v["relation"] == "Consistent" and v["step"] == 7
      and v["event"]["name"] == "torch.optim.sgd.sgd"]
assert len(lr) == 1, violations
assert {lr[0]["event"]["fields"]["arg:lr"], lr[0]["other"]["fields"]["arg:lr"]} == {"0.10000000000000001", "0.01"}
assert {lr[0]["event"]["pid"], lr[0]["other"]["pid"]} == {4101, 4102}
order = [v for v in violations if v["relation"] == "APISequence" and v["step"] == 5]
assert order and all(v["event"]["pid"] == 4101 for v in order), violations
assert any("zero_grad" in v["invariant"] and v["event"]["name"] == "torch._tensor.Tensor.backward"
           for v in order), [v["invariant"] for v in order]
PY

# A line cut in the middle: infer and check name the file and line, exit non-zero.
mkdir "$SCRATCH/corrupt"
cp "$EXCERPT"/trace_*.log "$SCRATCH/corrupt/"
api=$(basename "$(ls "$SCRATCH"/corrupt/trace_API_4101_*.log)")
sed -i '40s/.\{30\}$//' "$SCRATCH/corrupt/$api"
status=0
"$TCHECK" infer -o "$SCRATCH/corrupt.json" "$SCRATCH/corrupt" 2>"$SCRATCH/corrupt.txt" || status=$?
[ "$status" != 0 ] || fail "infer accepted a corrupt TrainCheck trace"
grep -q "$api:40: not JSON" "$SCRATCH/corrupt.txt" || fail "no file:line in: $(cat "$SCRATCH/corrupt.txt")"
status=0
"$TCHECK" check --rules "$SCRATCH/rules.json" "$SCRATCH/corrupt/$api" >/dev/null 2>"$SCRATCH/corrupt.txt" || status=$?
[ "$status" = 2 ] || fail "check exited $status on a corrupt TrainCheck trace, expected 2"
grep -q "$api:40: not JSON" "$SCRATCH/corrupt.txt" || fail "no file:line in: $(cat "$SCRATCH/corrupt.txt")"

# A folder without any TrainCheck trace.
mkdir "$SCRATCH/empty"
echo "not a trace" >"$SCRATCH/empty/notes.txt"
status=0
"$TCHECK" infer -o "$SCRATCH/empty.json" "$SCRATCH/empty" 2>"$SCRATCH/empty.txt" || status=$?
[ "$status" != 0 ] || fail "infer accepted a folder without traces"
grep -q "holds no TrainCheck trace" "$SCRATCH/empty.txt" || fail "unclear error: $(cat "$SCRATCH/empty.txt")"
echo "TrainCheck traces: invariants learnt, healthy clean, injected errors at steps 5 and 7, corrupt line named"
