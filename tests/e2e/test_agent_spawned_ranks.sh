#!/bin/bash
# The agent started after a job is running whose ranks have no RANK in their
# environment (started as torch.multiprocessing.spawn starts its workers:
# nccl-workload --spawn): each rank's series are labelled with the rank its
# own log gives for its pid, read from its communicators on arrival, not
# rank="unknown". The job is started by a launcher whose command line alone
# names it (as a spawned worker's "python -c from multiprocessing.spawn ..."
# does not name the script): --select finds the ranks through it.
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
[ -n "$labelled" ] || fail "the ranks are not labelled as their logs say (${!rank_of[*]} -> ${rank_of[*]}): $(grep '^tcheck_nccl_calls_total' "$SCRATCH/metrics.prom" | head -8)"
! grep -q '^tcheck_nccl_calls_total{pid="[0-9]*",rank="unknown"' "$SCRATCH/metrics.prom" ||
	fail "a rank is also counted as unknown: $(grep 'rank="unknown"' "$SCRATCH/metrics.prom" | head -3)"
! grep -q "rank unknown" "$SCRATCH/agent.log" || fail "the agent said a rank is unknown: $(grep 'rank unknown' "$SCRATCH/agent.log")"
# An agent for ranks 0-1 cannot place processes with no RANK: it says so for
# each rank, with its pid, and follows none of them.
port2=$(free_port $((port + 1)) 19800)
"$TCHECK" agent --listen "127.0.0.1:$port2" --select "$launcher" --ranks 0-1 --duration 60 \
	>"$SCRATCH/agent-ranks.log" 2>&1 &
BACKGROUND_PIDS+=($!)
for pid in "${!rank_of[@]}"; do
	wait_for_lines "$SCRATCH/agent-ranks.log" 1 "process $pid .*has no RANK.*--ranks 0-1 cannot place it" 30
	grep -q "process $pid .*has no RANK" "$SCRATCH/agent-ranks.log" ||
		fail "the --ranks agent did not say pid $pid cannot be placed: $(tail -5 "$SCRATCH/agent-ranks.log")"
done
curl -sf "http://127.0.0.1:$port2/metrics" >"$SCRATCH/metrics-ranks.prom" || fail "no metrics from the --ranks agent"
! grep -q '^tcheck_nccl_calls_total' "$SCRATCH/metrics-ranks.prom" ||
	fail "the --ranks agent follows a process it cannot place: $(grep '^tcheck_nccl_calls_total' "$SCRATCH/metrics-ranks.prom" | head -3)"
echo "PASS: 4 ranks without RANK labelled by their communicators' ranks; --ranks says it cannot place them"
