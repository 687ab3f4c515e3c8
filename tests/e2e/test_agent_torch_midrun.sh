#!/bin/bash
# agent --torch started while a 2-rank gloo DDP job of torch.multiprocessing.spawn
# workers is running (as after a DaemonSet restart): the workers have no RANK
# in their environment and gloo no NCCL communicator, so each rank's series are
# labelled with the rank its c10d process group holds, read on arrival: the
# rank each rank's own log gives for its pid, never "unknown".
source "$(dirname "$0")/lib.sh"
torch_stack
command -v curl >/dev/null || skip "curl is not installed"
port=$(free_port 19900 20000)
dir="$SCRATCH/midrun"
mkdir -p "$dir/log"
setsid $TORCH_PYTHON "$ROOT/tests/workloads/python/train_ddp.py" --launcher spawn --world-size 2 \
	--steps 2000 --step-sleep-ms 50 --timeout 200 --log-dir "$dir/log" >"$dir/out" 2>&1 &
BACKGROUND_PIDS+=($!)
# Each rank has logged a step: its process group was made before the agent came.
deadline=$((SECONDS + 120))
until grep -qs '"step": 2' "$dir/log/rank-0.jsonl" && grep -qs '"step": 2' "$dir/log/rank-1.jsonl"; do
	[ $SECONDS -lt $deadline ] || fail "the ranks did not reach step 2: $(tail -3 "$dir/out")"
	sleep 0.2
done
declare -A rank_of
for rank in 0 1; do
	pid=$(log_pid "$dir/log/rank-$rank.jsonl")
	! tr '\0' '\n' <"/proc/$pid/environ" | grep -q '^RANK=' || fail "rank $rank has RANK set"
	rank_of[$pid]=$rank
done
"$TCHECK" agent --torch --listen "127.0.0.1:$port" --select "$dir/log" --duration 120 \
	>"$dir/agent.out" 2>"$dir/agent.log" &
BACKGROUND_PIDS+=($!)
labelled() {
	curl -sf "http://127.0.0.1:$port/metrics" >"$dir/metrics.prom" || { echo "no metrics"; return 1; }
	for pid in "${!rank_of[@]}"; do
		grep -q "^tcheck_nccl_calls_total{pid=\"$pid\",rank=\"${rank_of[$pid]}\",.*function=\"c10d::allreduce\"" \
			"$dir/metrics.prom" || {
			echo "pid $pid not counted as rank ${rank_of[$pid]}; its series:"
			grep "pid=\"$pid\"" "$dir/metrics.prom" | head -5
			echo "the agent's log:"
			tail -5 "$dir/agent.log"
			return 1
		}
	done
}
until_passes 60 "the ranks are not labelled as their logs say" labelled
! grep -q 'rank="unknown"' "$dir/metrics.prom" || fail "a series without a rank: $(grep 'rank="unknown"' "$dir/metrics.prom" | head -3)"
! grep -q "rank unknown" "$dir/agent.log" || fail "the agent said a rank is unknown: $(grep 'rank unknown' "$dir/agent.log")"
echo "PASS: ranks ${rank_of[*]} (pids ${!rank_of[*]}) labelled from their c10d groups on arrival"
