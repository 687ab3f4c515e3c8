#!/bin/bash
# The Perfetto export is Chrome Trace Event JSON: one complete event per
# call, one track per rank and thread, names as metadata: each rank's track
# named by its rank, the pid its own log gives and the command it ran (the
# workload's own command line, not tcheck-bpf's).
source "$(dirname "$0")/lib.sh"
"$TCHECK" --quiet record -o "$SCRATCH/p.trace" -- "$WORKLOAD" --ranks 4 --steps 5 \
	--log-dir "$SCRATCH/log"
"$TCHECK" dump "$SCRATCH/p.trace" --format perfetto -o "$SCRATCH/p.json"
"$TCHECK" dump "$SCRATCH/p.trace" --calls-only >"$SCRATCH/p.jsonl"
python3 - "$SCRATCH/p.json" "$SCRATCH/p.jsonl" "$SCRATCH/log" \
	"$WORKLOAD --ranks 4 --steps 5 --log-dir $SCRATCH/log --worker" <<'PY' || fail "perfetto export is wrong"
import json, sys
document = json.load(open(sys.argv[1]))
log_dir, rank_command = sys.argv[3], sys.argv[4]
calls = [json.loads(l) for l in open(sys.argv[2])]
events = document["traceEvents"]
complete = [e for e in events if e["ph"] == "X"]
assert len(complete) == len(calls), (len(complete), len(calls))
names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
for rank in range(4):
    pid = json.loads(open(f"{log_dir}/rank-{rank}.jsonl").readline())["pid"]
    assert f"rank {rank} (pid {pid}): {rank_command}" in names, (rank, pid, names)
launcher = f": {rank_command.removesuffix(' --worker')}"
assert all(n.endswith((launcher, " --worker")) for n in names - {"tcheck-bpf recorder"}), names
tracks = {(e["pid"], e["tid"]) for e in complete}
assert len(tracks) >= 4, tracks
by_ts = sorted(complete, key=lambda e: e["ts"])
first_call = min(calls, key=lambda c: c["ts_ns"])
assert abs(by_ts[0]["ts"] * 1000 - first_call["ts_ns"]) < 2, (by_ts[0], first_call)
assert all(e["dur"] >= 0 for e in complete)
print(f"{len(complete)} events on {len(tracks)} tracks")
PY
