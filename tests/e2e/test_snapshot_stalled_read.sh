#!/bin/bash
# A process whose memory cannot be read (a page of a thread's stack held by
# userfaultfd and never served: every reader waits until the process ends,
# as with memory on a hung mount) does not stop the others from being read:
# `snapshot` leaves it unread after JOB_SNAPSHOT_STALL_MS (10 s), says which
# thread's stack it stalled on (the workload's own word), where in the
# kernel its reader waits (in the userfault) and which memory it reads (a
# span over the page the workload armed, in anonymous memory), writes the other
# process and exits 2; the agent that finds it goes on serving and finds the
# next process of the job. Time snapshot did not run (stopped, as on a
# paused machine) is not counted toward the 10 s.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl is not installed"
job="$SCRATCH/job"
mkdir -p "$job"
cp "$TEST_BIN/stuck-stack" /bin/sleep "$job/"
nccl="$TEST_BIN/lib/libnccl.so.2"
# A process of the job: it maps libnccl (what the agent follows) and its path is under $job.
start_stuck() {
	"$job/stuck-stack" --seconds 120 --library "$nccl" >"$1" 2>&1 &
	BACKGROUND_PIDS+=($!)
	stuck=$!
	wait_for_lines "$1" 1 "ready|cannot arm" 10
	grep -q "ready" "$1" || skip "userfaultfd is not available here: $(cat "$1")"
	stuck_tid=$(sed -n "s/ready: thread \([0-9]*\)'s.*/\1/p" "$1")
	stuck_page=$(sed -n "s/ready: .* at page \(0x[0-9a-f]*\)/\1/p" "$1")
}

# snapshot: the stuck process said, the other one read.
start_stuck "$SCRATCH/stuck-1.out"
"$job/sleep" 120 &
BACKGROUND_PIDS+=($!)
other=$!
status=0
timeout 60 "$TCHECK" snapshot --pid "$stuck" --pid "$other" --json >"$SCRATCH/snapshot.json" \
	2>"$SCRATCH/snapshot.err" || status=$?
[ "$status" = 2 ] || fail "snapshot exited $status, not 2 (a process that cannot be read): $(cat "$SCRATCH/snapshot.err")"
stacks_shown=no
[ -r /proc/self/stack ] && head -c1 /proc/self/stack >/dev/null 2>&1 && stacks_shown=yes
python3 - "$SCRATCH/snapshot.json" "$stuck" "$stuck_tid" "$other" "$stacks_shown" "$stuck_page" <<'PY' || fail "the snapshot does not say what it could not read"
import json, re, sys
snapshot = json.load(open(sys.argv[1]))
stuck, tid, other, stacks_shown = int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
page = int(sys.argv[6], 16)
processes = {p["pid"]: p for p in snapshot["processes"]}
note = processes[stuck].get("unread_note", "")
assert f"thread {tid}'s stack" in note and "10 s" in note, note
# Where the reader waits, where the kernel shows a thread's stack: the workload's userfaultfd.
if stacks_shown == "yes":
    assert "the reader waits in the kernel in handle_userfault" in note, note
# The memory it reads: a span over the armed page, in the thread's (anonymous) stack.
span = re.search(r"reading (\d+) bytes at (0x[0-9a-f]+) in anonymous memory \(rw-p\)", note)
assert span, note
start, size = int(span.group(2), 16), int(span.group(1))
assert start <= page < start + size, (hex(page), note)
assert "not read (pid %d)" % stuck in snapshot["summary"], snapshot["summary"]
read = processes[other]
assert "unread_note" not in read and read["command"].endswith("sleep 120"), read
assert [t["tid"] for t in read["threads"]] == [other], read["threads"]
assert 10 <= snapshot["read_seconds"] < 30, snapshot["read_seconds"]
print("stuck pid %d said (%s); pid %d read; %.1f s" % (stuck, note[:60], other, snapshot["read_seconds"]))
PY

# The agent: finding the stuck process does not keep it from the next one.
port=$(free_port 19700 19800)
events="$SCRATCH/events.jsonl"
"$TCHECK" agent --listen "127.0.0.1:$port" --events "$events" --select "$job/" --duration 120 \
	>"$SCRATCH/agent.out" 2>"$SCRATCH/agent.log" &
BACKGROUND_PIDS+=($!)
wait_for_lines "$SCRATCH/agent.log" 1 "serving metrics" 30
grep -q "serving metrics" "$SCRATCH/agent.log" || fail "the agent did not start: $(tail -3 "$SCRATCH/agent.log")"
# The two processes above are found at once; then a third, started after.
wait_for_lines "$SCRATCH/agent.log" 1 "pid $stuck was not read" 40
grep -q "pid $stuck was not read: reading thread $stuck_tid's stack" "$SCRATCH/agent.log" ||
	fail "the agent did not say the stuck process was not read: $(grep 'on arrival' "$SCRATCH/agent.log" | head -5)"
curl -sf -m 2 "http://127.0.0.1:$port/metrics" >/dev/null || fail "/metrics does not answer"
python3 -c 'import ctypes, sys, time; ctypes.CDLL(sys.argv[1]); time.sleep(60)' "$nccl" "$job/late" &
BACKGROUND_PIDS+=($!)
late=$!
wait_for_lines "$events" 1 "\"event\":\"attached\",\"pid\":$late" 40
grep -q "\"pid\":$late" "$events" || fail "the agent did not find pid $late after the stuck one: $(tail -3 "$SCRATCH/agent.log")"

# An agent with --ranks reads a process with no RANK to place it: the stuck one
# is said once and not read again (each try would hold the agent 10 s), and the
# agent keeps answering while it looks at the job every 2 s.
port2=$(free_port $((port + 1)) 19800)
"$TCHECK" agent --listen "127.0.0.1:$port2" --select "$job/" --ranks 0-0 --duration 120 \
	>"$SCRATCH/agent-ranks.out" 2>"$SCRATCH/agent-ranks.log" &
BACKGROUND_PIDS+=($!)
wait_for_lines "$SCRATCH/agent-ranks.log" 1 "pid $stuck was not read.*--ranks cannot place it" 40
grep -q "pid $stuck was not read.*--ranks cannot place it, and it is not read again" \
	"$SCRATCH/agent-ranks.log" || fail "the --ranks agent did not say it cannot read pid $stuck: $(tail -3 "$SCRATCH/agent-ranks.log")"
for _ in 1 2 3 4; do
	curl -sf -m 2 "http://127.0.0.1:$port2/metrics" >/dev/null || fail "/metrics of the --ranks agent does not answer within 2 s"
	sleep 1
done
[ "$(grep -c "pid $stuck was not read" "$SCRATCH/agent-ranks.log")" = 1 ] ||
	fail "the stuck process was read again: $(grep -c "pid $stuck was not read" "$SCRATCH/agent-ranks.log") times"

# The machine pauses while a read waits (here: snapshot stopped 3 s in, for 12 s): the
# time snapshot did not run is not counted toward the 10 s, and its note says how long it was.
start_stuck "$SCRATCH/stuck-2.out"
"$TCHECK" snapshot --pid "$stuck" --json >"$SCRATCH/paused.json" 2>"$SCRATCH/paused.err" &
snapshot=$!
BACKGROUND_PIDS+=("$snapshot")
sleep 3
kill -STOP "$snapshot"
sleep 12
kill -CONT "$snapshot"
status=0
wait "$snapshot" || status=$?
[ "$status" = 2 ] || fail "the paused snapshot exited $status, not 2: $(cat "$SCRATCH/paused.err")"
python3 - "$SCRATCH/paused.json" "$stuck" <<'PY' || fail "the paused snapshot counted the time it did not run"
import json, re, sys
snapshot = json.load(open(sys.argv[1]))
note = {p["pid"]: p for p in snapshot["processes"]}[int(sys.argv[2])].get("unread_note", "")
assert re.search(r"within 10 s \(not counting 1[12]\.[0-9] s in which tcheck-bpf did not run\)", note), note
# 3 s, the 12 s stop, then the rest of the 10 s.
assert 21 <= snapshot["read_seconds"] < 40, snapshot["read_seconds"]
print("paused snapshot: %.1f s (%s)" % (snapshot["read_seconds"], note[:120]))
PY
echo "PASS"
