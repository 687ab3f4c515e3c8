#!/bin/bash
# A healthy pause is no hang for `snapshot` either. A 2-rank gloo DDP job
# whose rank 0 saves a checkpoint (torch.save, 45 s) at step 5 while rank 1
# waits in its all-reduce: read once, rank 0 looks like a rank the other
# waits for; the snapshot reads it again 0.3 s later, sees it was writing,
# and names no hang (exit 0), saying why. Held against the workload's own
# checkpoint record: the snapshot was taken inside the pause it logged.
# A snapshot that could not read a process within its 10 s (the checkpoint's
# own I/O on a slow disk can hold a read that long) judges nothing and says
# so, exit 2, with where its reader waited and on which mapping: it is
# taken again, up to three times in all, still inside the pause, and one
# must judge.
source "$(dirname "$0")/lib.sh"
torch_stack

dir="$SCRATCH/pause"
mkdir -p "$dir"
setsid $TORCH_PYTHON "$ROOT/tests/workloads/python/train_ddp.py" --steps 7 \
	--checkpoint-every 5 --checkpoint-seconds 45 --timeout 165 --log-dir "$dir/log" \
	>"$dir/out" 2>&1 &
job=$!
BACKGROUND_PIDS+=($job)
deadline=$((SECONDS + 90))
# The first save of the pause writes rank 0's checkpoint file.
until [ -e "$dir/log/checkpoint-rank-0.pt" ]; do
	[ $SECONDS -lt $deadline ] || fail "rank 0 never saved a checkpoint: $(tail -3 "$dir/out")"
	sleep 0.2
done
# Rank 1 runs on into the step's all-reduce, and waits there.
wait_until_blocked "$(log_pid "$dir/log/rank-1.jsonl")"
ranks=$(pgrep -f -- "train_ddp.py --worker .*--log-dir $dir/log" | sort -n)
[ "$(echo "$ranks" | wc -l)" = 2 ] || fail "expected 2 rank processes, found: $ranks"
pid_options=$(for pid in $ranks; do printf -- '--pid %s ' "$pid"; done)
monotonic() { python3 -c 'import time; print(time.monotonic_ns())'; }
unread_notes() {
	python3 -c 'import json, sys
for p in json.load(open(sys.argv[1]))["processes"]:
    if p.get("unread_note"): print(p["unread_note"])' "$1" 2>/dev/null
}
for attempt in 1 2 3; do
	before=$(monotonic)
	status=0
	"$TCHECK" snapshot $pid_options --json -o "$dir/snapshot.json" 2>"$dir/snapshot.err" ||
		status=$?
	after=$(monotonic)
	[ "$status" = 2 ] && [ -n "$(unread_notes "$dir/snapshot.json")" ] || break
	echo "snapshot $attempt left a process unread: $(unread_notes "$dir/snapshot.json")"
done
[ "$status" = 0 ] || fail "snapshot exited $status during a checkpoint, not 0: $(head -c 600 "$dir/snapshot.json")"
# The launcher prints the stacks of a rank it stops at --timeout: the tail shows where it was.
wait "$job" || fail "the job failed: $(tail -30 "$dir/out")"

python3 - "$dir" "$before" "$after" <<'PY' || fail "the snapshot does not match the workload's log"
import json, os, sys
directory, before, after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
records = [json.loads(l) for l in open(os.path.join(directory, "log", "rank-0.jsonl"))]
pause = next(r for r in records if r.get("kind") == "checkpoint")
assert pause["ts_ns"] <= before and after <= pause["end_ns"], (pause, before, after)
snapshot = json.load(open(os.path.join(directory, "snapshot.json")))
assert snapshot["judged"] and snapshot["findings"] == [], snapshot["summary"]
summary = snapshot["summary"]
rank0 = next(p for p in snapshot["processes"] if p["rank"] == 0)
# Either the first reading already caught rank 0 between two saves, or it named
# rank 0 and the second reading saw its work.
assert "no hang judged" in summary or "no rank waits" in summary, summary
if "no hang judged" in summary:
    assert summary.startswith("rank 0 (pid {}) was behind the others, but it was at work "
                              "of its own".format(rank0["pid"])), summary
print("during the checkpoint:", summary)
PY
echo "PASS: a snapshot during a checkpoint pause names no hang"
