#!/bin/bash
# A recorder killed with SIGKILL leaves a trace that reads up to its last
# complete chunk, says it was cut short, and holds exactly a prefix of each
# rank's calls.
source "$(dirname "$0")/lib.sh"
"$TCHECK" --quiet record -o "$SCRATCH/cut.trace" -- \
	"$WORKLOAD" --ranks 2 --steps 2000 --step-sleep-ms 2 --log-dir "$SCRATCH/log" &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
wait_for_file "$SCRATCH/log/rank-1.progress" 20
while [ "$(cat "$SCRATCH/log/rank-0.progress")" -lt 100 ]; do sleep 0.05; done
kill -9 "$recorder"
wait "$recorder" 2>/dev/null || true
pkill -9 -f "nccl-workload --ranks 2 --steps 2000" || true
"$TCHECK" dump "$SCRATCH/cut.trace" >"$SCRATCH/cut.jsonl" 2>"$SCRATCH/dump.err" ||
	fail "a trace cut by SIGKILL must still read: $(cat "$SCRATCH/dump.err")"
python3 - "$SCRATCH/cut.jsonl" "$SCRATCH/log" <<'PY' || fail "the cut trace is not a prefix"
import glob, json, sys
trace = [json.loads(l) for l in open(sys.argv[1])]
calls = [r for r in trace if r.get("kind") == "nccl" and r["depth"] == 0]
assert len(calls) > 500, f"only {len(calls)} calls survived"
for path in glob.glob(sys.argv[2] + "/rank-*.jsonl"):
    log = [json.loads(l) for l in open(path)]
    log = [c for c in log if not (c["name"] == "ncclCommGetAsyncError" and c.get("async_error") == 0)]
    mine = sorted((c for c in calls if c["pid"] == log[0]["pid"]), key=lambda c: c["ts_ns"])
    assert 0 < len(mine) <= len(log) + 50, (len(mine), len(log))
    for want, got in zip(log, mine):
        assert (want["name"], want["ret"]) == (got["name"], got["ret"]), (want, got)
print(f"{len(calls)} calls read back from the cut trace")
PY
