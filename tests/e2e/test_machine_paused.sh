#!/bin/bash
# The whole machine pauses (a virtual machine's snapshot, a frozen cgroup):
# the job and tcheck-bpf stop together for 20 s, here with SIGSTOP, and go
# on. A healthy job is no hang and no 20 s straggler, live (attach) and
# offline (check of the trace attach wrote), and tcheck-bpf says it did not
# run for those 20 s, and at the end that they went unwatched. A rank that stops for good after the pause is still
# a hang, named, found after the pause: the workload's own progress file
# says where it stopped.
source "$(dirname "$0")/lib.sh"

PAUSE_SECONDS=20

# run_paused DIR [WORKLOAD OPTION...]: a 4-rank job attached to with --events and -o; once
# it is under way, it and tcheck-bpf stop for PAUSE_SECONDS and go on. Sets LAUNCHER and
# ATTACH to their pids.
run_paused() {
	local dir=$1 job
	shift
	mkdir -p "$dir"
	"$WORKLOAD" --ranks 4 --steps 1000 --step-sleep-ms 20 --log-dir "$dir" "$@" \
		>"$dir/job.out" 2>&1 &
	LAUNCHER=$!
	BACKGROUND_PIDS+=("$LAUNCHER")
	wait_for_file "$dir/rank-3.progress" 30
	"$TCHECK" attach --pid "$LAUNCHER" --events "$dir/events.jsonl" -o "$dir/job.trace" \
		>"$dir/attach.out" 2>"$dir/attach.err" &
	ATTACH=$!
	BACKGROUND_PIDS+=("$ATTACH")
	wait_for_lines "$dir/attach.out" 2 calls 60
	job=$(descendants_of "$LAUNCHER")
	# One signal each, as close together as the shell sends them.
	# shellcheck disable=SC2086
	kill -STOP "$LAUNCHER" $job "$ATTACH"
	sleep "$PAUSE_SECONDS"
	# shellcheck disable=SC2086
	kill -CONT "$LAUNCHER" $job "$ATTACH"
	date +%s >"$dir/resumed"
}

# Part 1: a healthy job.
run_paused "$SCRATCH/healthy"
wait "$LAUNCHER" || fail "the healthy job failed: $(tail -n 5 "$SCRATCH/healthy/job.out")"
for r in 0 1 2 3; do
	[ "$(cat "$SCRATCH/healthy/rank-$r.progress")" = 999 ] ||
		fail "rank $r of the healthy job did not finish its 1000 steps"
done
kill -INT "$ATTACH"
wait "$ATTACH" || fail "attach failed: $(tail -n 5 "$SCRATCH/healthy/attach.err")"
! grep -q '"kind":"hang"' "$SCRATCH/healthy/events.jsonl" ||
	fail "a healthy job paused with the machine was reported hung: $(grep '"kind":"hang"' \
		"$SCRATCH/healthy/events.jsonl" | head -n 1)"
# A rank that came to a collective after the pause and the others before it is no straggler.
python3 - "$SCRATCH/healthy/events.jsonl" "$PAUSE_SECONDS" <<'EOF' || fail "a slowdown across the pause"
import json, sys
pause_ns = int(sys.argv[2]) * 1e9
for line in open(sys.argv[1]):
    event = json.loads(line)
    if event["kind"] == "slowdown" and event.get("skew_ns", 0) > pause_ns / 2:
        print(f"reported: {line.strip()[:300]}", file=sys.stderr)
        sys.exit(1)
EOF
grep -Eq "warning: tcheck-bpf did not run for (19|2[0-9])\.[0-9] s \(this machine was paused" \
	"$SCRATCH/healthy/attach.err" ||
	fail "attach did not say that it did not run for ${PAUSE_SECONDS} s: $(grep -v 'on arrival' \
		"$SCRATCH/healthy/attach.err" | tail -n 5)"
# The closing lines say how long went unwatched, live and offline.
unwatched_pattern="(19|2[0-9])\.[0-9] s of this run went unwatched \(1 gap of over 3 s"
grep -Eq "$unwatched_pattern" "$SCRATCH/healthy/attach.err" ||
	fail "attach's closing lines do not say ${PAUSE_SECONDS} s went unwatched: $(tail -n 5 \
		"$SCRATCH/healthy/attach.err")"
# check exits 1 on any finding: a slowdown of a step or so on a busy machine is one.
status=0
"$TCHECK" check "$SCRATCH/healthy/job.trace" >"$SCRATCH/healthy/check.out" 2>&1 || status=$?
[ "$status" -le 1 ] || fail "check of the paused trace exited $status: $(tail -n 5 "$SCRATCH/healthy/check.out")"
grep -q " 0 hang(s)" "$SCRATCH/healthy/check.out" ||
	fail "check found a hang in the paused healthy trace: $(tail -n 5 "$SCRATCH/healthy/check.out")"
grep -Eq "$unwatched_pattern" "$SCRATCH/healthy/check.out" ||
	fail "check does not say ${PAUSE_SECONDS} s of the trace went unwatched: $(tail -n 5 \
		"$SCRATCH/healthy/check.out")"
python3 - "$SCRATCH/healthy/check.out" "$PAUSE_SECONDS" <<'EOF' || fail "check: a slowdown across the pause"
import re, sys
for late in re.findall(r"is ([0-9.]+) ms late", open(sys.argv[1]).read()):
    if float(late) > int(sys.argv[2]) * 1000 / 2:
        print(f"a step {late} ms late", file=sys.stderr)
        sys.exit(1)
EOF

# Part 2: rank 1 stops for ever at step 700, about ten seconds after the pause.
run_paused "$SCRATCH/stalled" --stall 1:700
deadline=$((SECONDS + 60))
until grep -q '"kind":"hang"' "$SCRATCH/stalled/events.jsonl" 2>/dev/null; do
	[ $SECONDS -lt $deadline ] || fail "rank 1's stall after the pause was not reported"
	sleep 0.2
done
found=$(date +%s)
stopped_at=$(cat "$SCRATCH/stalled/rank-1.progress")
[ "$stopped_at" = 699 ] || fail "rank 1 was to stop before step 700, its progress says $stopped_at"
python3 - "$SCRATCH/stalled/events.jsonl" <<'EOF' || fail "the hang after the pause names the wrong rank"
import json, sys
hang = next(json.loads(l) for l in open(sys.argv[1]) if '"kind":"hang"' in l)
named = {r["job_rank"] for r in hang["lagging_ranks"]}
if named != {1}:
    print(f"named {sorted(named)}: {json.dumps(hang)[:300]}", file=sys.stderr)
    sys.exit(1)
EOF
[ "$found" -ge "$(cat "$SCRATCH/stalled/resumed")" ] || fail "the hang was reported before the pause ended"
kill -INT "$ATTACH"
wait "$ATTACH" || true
echo "passed"
