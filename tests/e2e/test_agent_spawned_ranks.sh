#!/bin/bash
# The agent started after a job is running whose ranks have no RANK in their
# environment (started as torch.multiprocessing.spawn starts its workers:
# nccl-workload --spawn): each rank's series are labelled with the rank its
# own log gives for its pid, read from its communicators on arrival, not
# rank="unknown". The job is started by a launcher whose command line alone
# names it (as a spawned worker's "python -c from multiprocessing.spawn ..."
# does not name the script): --select finds the ranks through it. A second
# agent with --ranks 0-1 places the same processes by the same ranks.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl is not installed"
port=$(free_port 19700 19800)
mkdir -p "$SCRATCH/job"
launcher="spawned-job-launcher-$port"
# shellcheck disable=SC2016 # expanded by the launcher's shell
LD_LIBRARY_PATH="$TEST_BIN/lib" setsid bash -c '"$@"; exit $?' "$launcher" \
	"$WORKLOAD" --spawn --ranks 4 --steps 400 \
	--step-sleep-ms 50 --log-dir "$SCRATCH/job" >"$SCRATCH/job.out" 2>&1 &
BACKGROUND_PIDS+=($!)
deadline=$((SECONDS + 30))
until [ "$(cat "$SCRATCH/job/rank-3.progress" 2>/dev/null || echo -1)" -ge 3 ]; do
	[ $SECONDS -lt $deadline ] || fail "the workload did not reach step 3: $(tail -3 "$SCRATCH/job.out")"
	sleep 0.1
done
declare -A rank_of
for rank in 0 1 2 3; do
	pid=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["pid"])' \
		"$SCRATCH/job/rank-$rank.jsonl")
	environment=$(tr '\0' '\n' <"/proc/$pid/environ")
	! grep -q '^RANK=' <<<"$environment" || fail "rank $rank has RANK set"
	command_line=$(tr '\0' ' ' <"/proc/$pid/cmdline")
	[[ "$command_line" != *"$launcher"* ]] || fail "rank $rank's own command line names the launcher"
	rank_of[$pid]=$rank
done
"$TCHECK" agent --listen "127.0.0.1:$port" --select "$launcher" --duration 60 \
	>"$SCRATCH/agent.log" 2>&1 &
BACKGROUND_PIDS+=($!)
labelled=""
for _ in $(seq 60); do
	sleep 0.5
	curl -sf "http://127.0.0.1:$port/metrics" >"$SCRATCH/metrics.prom" || continue
	labelled=1
	for pid in "${!rank_of[@]}"; do
		grep -q "^tcheck_nccl_calls_total{pid=\"$pid\",rank=\"${rank_of[$pid]}\"," \
			"$SCRATCH/metrics.prom" || labelled=""
	done
	[ -n "$labelled" ] && break
done
[ -n "$labelled" ] || fail "the ranks are not labelled as their logs say (${!rank_of[*]} -> ${rank_of[*]}): $(grep '^tcheck_nccl_calls_total' "$SCRATCH/metrics.prom" | cut -d, -f1-2 | sort -u); the agent said: $(grep 'on arrival' "$SCRATCH/agent.log" | head -40)"
# Every communicator the arrival snapshot names for a rank is one its own
# log says it made: a word on a stack that only looks like one is not taken.
python3 - "$SCRATCH/agent.log" "$SCRATCH/job" <<'CHECK' || fail "the arrival snapshot named a communicator no rank made"
import glob, json, re, sys
made = {}
for path in glob.glob(sys.argv[2] + "/rank-*.jsonl"):
    for line in open(path):
        call = json.loads(line)
        if "comm_hash" in call.get("args", {}):
            made.setdefault(call["pid"], set()).add(call["args"]["comm_hash"])
pid, named = None, 0
for line in open(sys.argv[1]):
    header = re.search(r"on arrival: rank -?\d+, pid (\d+):", line)
    if header:
        pid = int(header.group(1))
    found = re.search(r"on arrival:   communicator 0x([0-9a-f]+) rank", line)
    if found and pid is not None:
        named += 1
        if int(found.group(1), 16) not in made.get(pid, set()):
            sys.exit(f"pid {pid}: communicator 0x{found.group(1)} is in no call of its log")
if named < 4:
    sys.exit(f"the arrival snapshot named {named} communicators for 4 ranks")
CHECK
! grep -q '^tcheck_nccl_calls_total{pid="[0-9]*",rank="unknown"' "$SCRATCH/metrics.prom" ||
	fail "a rank is also counted as unknown: $(grep 'rank="unknown"' "$SCRATCH/metrics.prom" | head -3)"
! grep -q "rank unknown" "$SCRATCH/agent.log" || fail "the agent said a rank is unknown: $(grep 'rank unknown' "$SCRATCH/agent.log")"
# An agent for ranks 0-1 places processes with no RANK by the rank their
# memory gives (their communicators, as on arrival): it follows ranks 0 and 1
# as their logs name them, says where it placed each rank, and leaves 2 and 3.
port2=$(free_port $((port + 1)) 19800)
"$TCHECK" agent --listen "127.0.0.1:$port2" --select "$launcher" --ranks 0-1 --duration 60 \
	>"$SCRATCH/agent-ranks.log" 2>&1 &
BACKGROUND_PIDS+=($!)
for pid in "${!rank_of[@]}"; do
	wait_for_lines "$SCRATCH/agent-ranks.log" 1 "process $pid has no RANK.*it is rank" 30
	grep -q "process $pid has no RANK in its environment; its memory says it is rank ${rank_of[$pid]}:" \
		"$SCRATCH/agent-ranks.log" ||
		fail "the --ranks agent did not place pid $pid as rank ${rank_of[$pid]}: $(grep "process $pid" "$SCRATCH/agent-ranks.log")"
done
placed() {
	curl -sf "http://127.0.0.1:$port2/metrics" >"$SCRATCH/metrics-ranks.prom" || { echo "no metrics"; return 1; }
	for pid in "${!rank_of[@]}"; do
		if [ "${rank_of[$pid]}" -le 1 ]; then
			grep -q "^tcheck_nccl_calls_total{pid=\"$pid\",rank=\"${rank_of[$pid]}\"," "$SCRATCH/metrics-ranks.prom" ||
				{ echo "rank ${rank_of[$pid]} (pid $pid) not followed"; return 1; }
		elif grep -q "^tcheck_nccl_calls_total{pid=\"$pid\"" "$SCRATCH/metrics-ranks.prom"; then
			echo "rank ${rank_of[$pid]} (pid $pid) followed, outside --ranks 0-1"
			return 1
		fi
	done
}
until_passes 30 "the --ranks agent does not follow exactly ranks 0 and 1" placed
echo "PASS: 4 ranks without RANK labelled by their communicators' ranks; --ranks 0-1 placed them by the same"
