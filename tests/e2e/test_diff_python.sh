#!/bin/bash
# diff on Python recordings, made as README tells a user (record --python,
# with the optimizer's operators): the same training script twice agrees; a
# run with another learning rate differs in exactly the optimizer's lr
# argument at its construction; a run whose layer freezes at the step its
# own log names differs first in the optimizer step's torch operators at
# that step, which the side-by-side Perfetto file marks.
source "$(dirname "$0")/lib.sh"
torch_stack
PY="$ROOT/tests/workloads/python"

record() { # name, script, arguments...
	local name=$1 script=$2
	shift 2
	"$TCHECK" --quiet record -o "$SCRATCH/$name.trace" --python --torch-op add_ --torch-op mul_ \
		-- $TORCH_PYTHON "$PY/$script" "$@" >/dev/null 2>"$SCRATCH/$name.err" ||
		fail "$name: record failed: $(cat "$SCRATCH/$name.err")"
}
# compare NAME REFERENCE CANDIDATE EXPECTED_EXIT: diff --json into NAME.jsonl.
compare() {
	local status=0
	"$TCHECK" diff --json "$SCRATCH/$2.trace" -- "$SCRATCH/$3.trace" >"$SCRATCH/$1.jsonl" \
		2>"$SCRATCH/$1.err" || status=$?
	[ "$status" = "$4" ] || fail "$1: diff exited $status, not $4: $(cat "$SCRATCH/$1.jsonl" "$SCRATCH/$1.err")"
}

record reference train_cpu.py --steps 4 --no-module-hooks --log "$SCRATCH/reference.jsonl"
record again train_cpu.py --steps 4 --no-module-hooks --log "$SCRATCH/again.jsonl"
record lr train_cpu.py --steps 4 --no-module-hooks --lr 0.1 --log "$SCRATCH/lr.jsonl"
compare same reference again 0
compare lr reference lr 1
record healthy silent_errors.py --bug none --steps 5 --trigger 3 --log "$SCRATCH/healthy.json"
record frozen silent_errors.py --bug frozen --steps 5 --trigger 3 --log "$SCRATCH/frozen.json"
compare frozen healthy frozen 1
status=0
"$TCHECK" diff "$SCRATCH/healthy.trace" -- "$SCRATCH/frozen.trace" \
	--perfetto "$SCRATCH/both.json" >/dev/null 2>&1 || status=$?
[ "$status" = 1 ] || fail "diff --perfetto exited $status, not 1"

python3 - "$SCRATCH" <<'PY' || fail "diff did not name exactly what changed"
import json, os, sys
scratch = sys.argv[1]
def differences(name):
    rows = [json.loads(l) for l in open(os.path.join(scratch, name + ".jsonl"))]
    return [r for r in rows if r["kind"] == "difference"]
assert differences("same") == [], differences("same")
lr = differences("lr")
assert len(lr) == 1, lr
row = lr[0]
assert row["what"] == "python_argument" and row["step"] == 0 and row["job_rank"] == 0, row
assert row["event"].endswith("SGD.__init__"), row
assert "lr=0.05" in row["reference"] and "lr=0.1" in row["candidate"], row
# Nothing else of the construction changed: the arguments differ only in lr.
others = lambda text: sorted(a for a in text.split(", ") if not a.startswith("lr="))
assert others(row["reference"]) == others(row["candidate"]), row
truth = json.load(open(os.path.join(scratch, "frozen.json")))
frozen_from = min(s["step"] for s in truth["steps"] if s["frozen_layers"])
frozen = differences("frozen")
assert len(frozen) == 1, frozen
row = frozen[0]
assert row["what"] == "torch_operator" and row["step"] == frozen_from, (row, frozen_from)
# Side by side: both runs' ranks, and the difference marked on the healthy run
# at one of its operators of that step (the first the frozen run lacks).
events = json.load(open(os.path.join(scratch, "both.json")))["traceEvents"]
names = {e["args"]["name"] for e in events if e["ph"] == "M"}
assert names == {"reference rank 0", "candidate rank 0"}, names
marks = [e for e in events if e["name"].startswith("difference: ")]
assert [m["name"] for m in marks] == ["difference: torch_operator"], marks
ops = [e for e in events if e["ph"] == "i" and e["pid"] == marks[0]["pid"]
       and e["name"] == marks[0]["args"]["reference"] and e["args"]["step"] == frozen_from]
assert ops and marks[0]["ts"] in {e["ts"] for e in ops}, (marks[0], ops[:2])
print("same run: no difference; lr: the optimizer's lr at step 0; frozen layer: the step's "
      f"operators at step {frozen_from}, the script's own")
PY
