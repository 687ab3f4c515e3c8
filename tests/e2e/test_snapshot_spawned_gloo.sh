#!/bin/bash
# A 2-rank gloo DDP job started by torch.multiprocessing.spawn, already hung
# when tcheck-bpf arrives (rank 1 asleep in Python before its backward at
# step 5): its ranks have no RANK in their initial environment, and gloo has
# no NCCL communicator to name them. `snapshot` reads each rank from its c10d
# process group (rank and size where torch's base class keeps them) and names
# rank 1, as the ranks' own logs give them.
source "$(dirname "$0")/lib.sh"
torch_stack

dir="$SCRATCH/spawn"
mkdir -p "$dir"
setsid $TORCH_PYTHON "$ROOT/tests/workloads/python/train_ddp.py" --launcher spawn --steps 20 \
	--fault stop:1:5 --timeout 120 --log-dir "$dir/log" >"$dir/out" 2>&1 &
BACKGROUND_PIDS+=($!)
wait_for_lines "$dir/log/rank-1.jsonl" 1 '"kind": "fault"' 90
rank0=$(log_pid "$dir/log/rank-0.jsonl")
rank1=$(log_pid "$dir/log/rank-1.jsonl")
for pid in "$rank0" "$rank1"; do
	! tr '\0' '\n' <"/proc/$pid/environ" | grep -q '^RANK=' ||
		fail "pid $pid has RANK in its initial environment: not what a spawned worker has"
done
# Rank 0 runs on into the step's all-reduce, and waits there.
wait_until_blocked "$rank0"
status=0
"$TCHECK" snapshot --pid "$rank0" --pid "$rank1" --json -o "$dir/snapshot.json" \
	2>"$dir/snapshot.err" || status=$?
[ "$status" = 1 ] || fail "snapshot exited $status, not 1 (a rank lags): $(snapshot_summary "$dir/snapshot.json") $(cat "$dir/snapshot.err")"
python3 - "$dir/snapshot.json" "$rank0" "$rank1" <<'PY' || fail "the ranks are not those of the logs: $(head -c 1500 "$dir/snapshot.json")"
import json, sys
snapshot = json.load(open(sys.argv[1]))
want = {int(sys.argv[2]): 0, int(sys.argv[3]): 1}
for process in snapshot["processes"]:
    rank = want[process["pid"]]
    assert process["rank"] == rank, (process["pid"], process["rank"], rank)
    groups = [(g["rank"], g["size"]) for g in process["process_groups"]]
    assert (rank, 2) in groups, (process["pid"], groups)
findings = snapshot["findings"]
assert [f["rank"] for f in findings] == [1], findings
print("ranks read from the c10d groups:", {p["pid"]: p["rank"] for p in snapshot["processes"]},
      "; lagging:", findings[0]["rank"])
PY
echo "PASS"
