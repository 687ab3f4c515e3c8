#!/bin/bash
# The agent started after a job already hung (the NCCL test double in
# blocking mode, rank 1 asleep at the start of step 5): on finding the job
# it reads its state and reports the stuck rank (events: a hang on arrival
# naming rank 1 and the sequence number its own log gives; metrics: the
# hang counted), though the job makes no call the probes could see.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl is not installed"
port=$(free_port 19600 19700)
mkdir -p "$SCRATCH/job"
NCCL_DOUBLE_BLOCKING=1 LD_LIBRARY_PATH="$TEST_BIN/lib" setsid "$WORKLOAD" --ranks 2 --steps 20 \
	--stall 1:5 --log-dir "$SCRATCH/job" >"$SCRATCH/job.out" 2>&1 &
BACKGROUND_PIDS+=($!)
deadline=$((SECONDS + 30))
until grep -q "rank 1 stalls at step 5" "$SCRATCH/job.out"; do
	[ $SECONDS -lt $deadline ] || fail "the workload did not stall: $(tail -3 "$SCRATCH/job.out")"
	sleep 0.1
done
# Rank 0 runs on into the collective rank 1 never joins, and waits there.
wait_until_blocked "$(log_pid "$SCRATCH/job/rank-0.jsonl")"
events="$SCRATCH/events.jsonl"
started=$SECONDS
"$TCHECK" agent --listen "127.0.0.1:$port" --events "$events" --select "$SCRATCH/job" \
	--duration 60 >"$SCRATCH/agent.log" 2>&1 &
BACKGROUND_PIDS+=($!)
until grep -qs '"on_arrival":true' "$events"; do
	[ $((SECONDS - started)) -lt 20 ] || fail "the agent reported no hang on arrival: $(tail -5 "$SCRATCH/agent.log")"
	sleep 0.2
done
echo "hang on arrival reported $((SECONDS - started)) s after the agent started"
found=""
for _ in $(seq 20); do
	curl -sf "http://127.0.0.1:$port/metrics" >"$SCRATCH/metrics.prom" || true
	grep -q '^tcheck_findings_total{kind="hang"} [1-9]' "$SCRATCH/metrics.prom" && found=1 && break
	sleep 0.5
done
[ -n "$found" ] || fail "the hang is not counted: $(grep findings "$SCRATCH/metrics.prom")"
python3 - "$events" "$SCRATCH/job" <<'PY' || fail "the hang on arrival disagrees with the ranks' logs"
import json, os, sys
events, logs = sys.argv[1], sys.argv[2]
COMMUNICATION = {"ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllGather",
                 "ncclReduceScatter", "ncclSend", "ncclRecv", "ncclAlltoAll", "ncclGather",
                 "ncclScatter"}
hangs = [e for e in map(json.loads, open(events)) if e.get("on_arrival")]
assert hangs and all(h["kind"] == "hang" and h["rank"] == 1 for h in hangs), hangs
records = [json.loads(l) for l in open(os.path.join(logs, "rank-1.jsonl"))]
hashes = {}
for r in records:
    if r["name"] == "ncclCommInitRank":
        hashes[r["args"]["comm_out"]] = r["args"]["comm_hash"]
    elif r["name"] == "ncclCommSplit" and r["args"]["newcomm_out"]:
        hashes[r["args"]["newcomm_out"]] = r["args"]["comm_hash"]
made = {}
for r in records:
    if r["name"] in COMMUNICATION:
        key = "0x%016x" % hashes[r["args"]["comm"]]
        made[key] = made.get(key, 0) + 1
# On each communicator named, rank 1 made calls 0..n-1: the next, n, is the one waited in.
for hang in hangs:
    assert hang["seq"] == made[hang["comm_id"]], (hang, made)
    assert sorted(r["rank"] for r in hang["ranks"] if r["rank"] >= 0) == [0, 1], hang
world_hang = hangs[0]
print("rank 1 named at seq", world_hang["seq"], "of", world_hang["comm_id"])
PY
echo "PASS: the agent names the rank of a job hung before it started"
