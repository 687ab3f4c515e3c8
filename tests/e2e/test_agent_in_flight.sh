#!/bin/bash
# The agent through a real hang of the NCCL test double in blocking mode:
# rank 1 sleeps before step 5, rank 0 is blocked inside the all-reduce rank 1
# never issued. The agent must export rank 0's in-flight sequence, one past
# rank 1's last, and none for rank 1: what TcheckCollectiveHang compares.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl is not installed"
port=$(free_port 19500 19600)
events="$SCRATCH/events.jsonl"
mkdir -p "$SCRATCH/job"
"$TCHECK" agent --listen "127.0.0.1:$port" --events "$events" --select "$SCRATCH/job" \
	--duration 90 >"$SCRATCH/agent.log" 2>&1 &
BACKGROUND_PIDS+=($!)
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/metrics" >/dev/null && break
	sleep 0.1
done
NCCL_DOUBLE_BLOCKING=1 LD_LIBRARY_PATH="$TEST_BIN/lib" "$WORKLOAD" --ranks 2 --steps 20 \
	--stall 1:5 --log-dir "$SCRATCH/job" --wait-file "$SCRATCH/job/go" >"$SCRATCH/job.out" 2>&1 &
BACKGROUND_PIDS+=($!)
for _ in $(seq 200); do
	[ "$(grep -c '"event":"attached"' "$events" 2>/dev/null)" -ge 3 ] && break
	sleep 0.1
done
[ "$(grep -c '"event":"attached"' "$events")" -ge 3 ] ||
	fail "the agent did not find the job's processes: $(cat "$SCRATCH/agent.log")"
touch "$SCRATCH/job/go"
# The metrics are refreshed every 2 s: wait for the stall to show.
found=""
for _ in $(seq 60); do
	curl -sf "http://127.0.0.1:$port/metrics" >"$SCRATCH/metrics.prom" || true
	grep -q "stalls at step" "$SCRATCH/job.out" &&
		grep -q '^tcheck_collective_in_flight_sequence{.*rank="0"' "$SCRATCH/metrics.prom" &&
		found=1 && break
	sleep 0.5
done
[ -n "$found" ] || fail "no in-flight sequence for rank 0 during the stall: $(grep in_flight "$SCRATCH/metrics.prom")"
cat >"$SCRATCH/in_flight.py" <<'PY'
import json, re, sys, time
series = {}
for line in open(sys.argv[1]):
    match = re.match(r'(tcheck_collective_\w+)\{(.*)\} (\S+)$', line)
    if match:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
        series.setdefault(match.group(1), {})[(labels["rank"], labels["comm"])] = float(match.group(3))
in_flight = series.get("tcheck_collective_in_flight_sequence", {})
sequence = series["tcheck_collective_sequence"]
assert not [key for key in in_flight if key[0] == "1"], f"rank 1 sleeps, yet in flight: {in_flight}"
# Rank 1's communication calls per communicator, from its own log.
communication = {"ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllGather",
                 "ncclReduceScatter", "ncclSend", "ncclRecv", "ncclAlltoAll", "ncclGather",
                 "ncclScatter"}
issued_by_rank1 = sum(1 for line in open(f"{sys.argv[2]}/rank-1.jsonl")
                      if (c := json.loads(line))["name"] in communication and c["ret"] == 0)
ahead = 0
for (rank, comm), value in in_flight.items():
    last_of_rank1 = sequence[("1", comm)]
    # Rank 0 is inside the call rank 1 never made: one past rank 1's last.
    assert value == last_of_rank1 + 1, f"comm {comm}: rank 0 inside {value}, rank 1 last {last_of_rank1}"
    assert sequence[("0", comm)] == value - 1, f"comm {comm}: rank 0 last returned {sequence[('0', comm)]}"
    entered = series["tcheck_collective_in_flight_entry_timestamp_seconds"][(rank, comm)]
    assert 0 <= time.time() - entered < 90, f"entered {time.time() - entered:.0f} s ago"
    ahead += 1
assert ahead >= 1
# Rank 1's sequences agree with its log: what it issued, numbered from 0.
assert sum(v + 1 for (rank, _), v in sequence.items() if rank == "1") == issued_by_rank1, \
    (sequence, issued_by_rank1)
print(f"rank 0 in flight on {ahead} communicator(s), one past rank 1's last; rank 1 issued {issued_by_rank1}")
PY
scrape_and_check() {
	curl -sf "http://127.0.0.1:$port/metrics" >"$SCRATCH/metrics.prom" || return 1
	python3 "$SCRATCH/in_flight.py" "$SCRATCH/metrics.prom" "$SCRATCH/job"
}
# The metrics are refreshed every 2 s: the state settles at the agent's pace.
until_passes 30 "the in-flight series disagree with the ranks' logs" scrape_and_check
echo "agent in flight: rank 0's blocked collective exported"
