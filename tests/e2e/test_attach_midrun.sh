#!/bin/bash
# Attaches to a 4-rank job already past its set-up (communicators exist) and
# checks the calls from the next step on against the log, and that the
# communicators were recovered from the library's memory: rank, size and the
# same identity the ranks' own commHash gives.
source "$(dirname "$0")/lib.sh"
"$WORKLOAD" --ranks 4 --steps 400 --step-sleep-ms 10 --log-dir "$SCRATCH/log" &
launcher=$!
BACKGROUND_PIDS+=("$launcher")
wait_for_file "$SCRATCH/log/rank-3.progress" 20
while [ "$(cat "$SCRATCH/log/rank-0.progress")" -lt 20 ]; do sleep 0.05; done
"$TCHECK" record -o "$SCRATCH/mid.trace" --pid "$launcher" 2>"$SCRATCH/record.err" &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
# The first step that started after every probe was in place: the recorder
# says "tracing N processes" once they are.
wait_for_lines "$SCRATCH/record.err" 1 "^tcheck-bpf: tracing " 60
from=$(( $(sort -n "$SCRATCH"/log/rank-*.progress | tail -n 1) + 2 ))
wait "$launcher" || fail "the workload failed while traced"
wait "$recorder" || fail "record exited with an error: $(cat "$SCRATCH/record.err")"
"$TCHECK" dump "$SCRATCH/mid.trace" >"$SCRATCH/mid.jsonl"
python3 "$ROOT/tests/e2e/compare_ground_truth.py" "$SCRATCH/mid.jsonl" "$SCRATCH/log" \
	--since-step "$from" --expect-ranks 4 || fail "trace after attach differs from the log"
python3 - "$SCRATCH/mid.jsonl" "$SCRATCH/log" <<'PY' || fail "communicators were not recovered"
import glob, json, sys
trace = [json.loads(l) for l in open(sys.argv[1])]
comms = [r for r in trace if r.get("kind") == "communicator"]
assert comms, "no communicator records"
for c in comms:
    assert c["origin"] == "recovered", c
    assert c["rank"] is not None and c["nranks"] in (2, 4), c
# The world communicator: its identity is the hash of the unique id in the log.
world = None
for path in glob.glob(sys.argv[2] + "/rank-*.jsonl"):
    for line in open(path):
        call = json.loads(line)
        if call["name"] == "ncclCommInitRank":
            world = call["args"]["commId"]
recovered_world = [c for c in comms if int(c["comm_id"], 16) == world]
assert len(recovered_world) == 4, f"world comm recovered on {len(recovered_world)} ranks"
assert sorted(c["rank"] for c in recovered_world) == [0, 1, 2, 3]
print(f"{len(comms)} communicators recovered")
PY
