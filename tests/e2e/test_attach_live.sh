#!/bin/bash
# attach prints a live line every second with the calls seen and no drops,
# and Ctrl-C (SIGINT) detaches: the job keeps running, untouched.
source "$(dirname "$0")/lib.sh"
"$WORKLOAD" --ranks 2 --steps 100000 --step-sleep-ms 10 --log-dir "$SCRATCH/log" &
launcher=$!
BACKGROUND_PIDS+=("$launcher")
wait_for_file "$SCRATCH/log/rank-1.progress" 20
"$TCHECK" attach --pid "$launcher" >"$SCRATCH/live.out" 2>"$SCRATCH/live.err" &
attach=$!
BACKGROUND_PIDS+=("$attach")
# Two status lines (one a second), however long the attach itself took.
wait_for_lines "$SCRATCH/live.out" 2 calls 60
kill -INT "$attach"
wait "$attach" || fail "attach did not exit cleanly on SIGINT: $(cat "$SCRATCH/live.err")"
lines=$(grep -c "calls" "$SCRATCH/live.out" || true)
[ "$lines" -ge 2 ] || fail "expected a status line per second, got: $(cat "$SCRATCH/live.out")"
grep -q "AllReduce" "$SCRATCH/live.out" || fail "status lines should name the busiest functions"
grep -q "drops 0" "$SCRATCH/live.out" || fail "status lines should report drops"
kill -0 "$launcher" 2>/dev/null || fail "the job must keep running after detach"
detached_at=$(cat "$SCRATCH/log/rank-0.progress")
deadline=$((SECONDS + 20))
while [ "$(cat "$SCRATCH/log/rank-0.progress")" -lt $((detached_at + 50)) ]; do
	[ $SECONDS -lt $deadline ] || fail "the job stopped making progress after detach"
	kill -0 "$launcher" 2>/dev/null || fail "the job died after detach"
	sleep 0.1
done
