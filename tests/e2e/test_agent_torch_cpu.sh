#!/bin/bash
# agent --torch on a CPU job: a 2-rank gloo DDP job whose ranks are
# torch.multiprocessing.spawn workers, selected by the script's log folder
# (the workers' own command lines, "python -c from multiprocessing.spawn
# ...", do not hold it; their launcher's does). Its collectives are c10d's,
# not NCCL's: each rank's series count its c10d barriers as its own log
# does, one all-reduce for each backward it logged (DDP's one gradient
# bucket of this small model), labelled with the rank its log gives.
source "$(dirname "$0")/lib.sh"
torch_stack
command -v curl >/dev/null || skip "curl is not installed"
port=$(free_port 19800 19900)
dir="$SCRATCH/cpu"
mkdir -p "$dir/log"
events="$dir/events.jsonl"
"$TCHECK" agent --torch --listen "127.0.0.1:$port" --select "$dir/log" --events "$events" \
	--duration 300 >"$dir/agent.out" 2>"$dir/agent.log" &
BACKGROUND_PIDS+=($!)
wait_for_lines "$dir/agent.log" 1 "serving metrics" 30
# The ranks import torch, then wait for the go file before their process
# group is made: every collective they make comes after the agent found them.
setsid $TORCH_PYTHON "$ROOT/tests/workloads/python/train_ddp.py" --launcher spawn --world-size 2 \
	--steps 12 --wait-file "$dir/go" --wait-timeout 120 --timeout 120 --log-dir "$dir/log" \
	>"$dir/out" 2>&1 &
job=$!
BACKGROUND_PIDS+=("$job")
# The launcher and its two workers (each imports torch first: slow in a
# chrooted root on a busy machine).
wait_for_lines "$events" 3 '"event":"attached"' 180
touch "$dir/go"
wait "$job" || fail "the job failed: $(tail -5 "$dir/out")"

check_metrics() {
	curl -sf "http://127.0.0.1:$port/metrics" >"$dir/metrics.prom" || { echo "no metrics"; return 1; }
	python3 - "$dir" <<'PY'
import collections, json, re, sys
directory = sys.argv[1]
series = collections.defaultdict(float)
for line in open(directory + "/metrics.prom"):
    found = re.match(r'tcheck_nccl_calls_total\{pid="(\d+)",rank="([^"]*)".*function="([^"]*)"\} (\S+)', line)
    if found:
        series[(int(found[1]), found[2], found[3])] += float(found[4])
for rank in (0, 1):
    records = [json.loads(l) for l in open(f"{directory}/log/rank-{rank}.jsonl")]
    pid = records[0]["pid"]
    calls = collections.Counter(r.get("call") for r in records if r.get("kind") == "api")
    want = {"c10d::barrier": calls["torch.distributed.barrier()"],
            "c10d::allreduce": calls["loss.backward()"]}
    assert want["c10d::barrier"] and want["c10d::allreduce"] == 12, (rank, want)
    for function, count in want.items():
        got = series.get((pid, str(rank), function), 0)
        assert got == count, f"rank {rank} (pid {pid}): {function} counted {got}, its log says {count}"
unknown = [key for key in series if key[1] == "unknown"]
assert not unknown, f"series without a rank: {unknown}"
print("2 ranks: c10d barriers and all-reduces counted as their logs say, labelled by rank")
PY
}
until_passes 30 "the agent's c10d series do not match the ranks' logs" check_metrics
! grep -q "rank unknown" "$dir/agent.log" || fail "the agent said a rank is unknown: $(grep 'rank unknown' "$dir/agent.log")"
echo "PASS"
