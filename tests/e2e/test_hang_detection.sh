#!/bin/bash
# Hangs and slowdowns of the NCCL test double's workload, injected with
# --delay, are found by `check` on a recorded trace and live by `attach`:
# the stalled rank, its communicator, the collective it never issued and
# that call's sequence number, against the workload's own fault file and
# call logs; the slowed rank named as the straggler; nothing on a run
# without a fault. Steps are 65 ms, as in the evaluation: on a busy two-core
# machine the whole job can stall for a 30 ms step or two, which is a real
# two-step silence (a hang) at that step length.
# e2e-alone: the hangs' wall-clock times are held to within 10 ms of the faults
source "$(dirname "$0")/lib.sh"

# Starts the workload ($@ are extra options) and waits until its ranks run.
start_workload() {
	local log_dir=$1
	shift
	"$WORKLOAD" --ranks 4 --steps 100000 --step-sleep-ms 60 --log-dir "$log_dir" "$@" \
		2>"$log_dir.err" &
	launcher=$!
	BACKGROUND_PIDS+=("$launcher")
	wait_for_file "$log_dir/rank-3.progress" 20
}

# The stalled rank's truth: the collective it never issued on the report's communicator
# (with its sequence number when $3 is a trace recorded from the job's start).
expect_hang() {
	python3 - "$1" "$2" "$3" "$TCHECK" <<'PYTHON' || fail "the hang report does not match the workload's log"
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("evaluation", sys.argv[2] + "/tools/eval/hang-eval.py")
evaluation = importlib.util.module_from_spec(spec)
spec.loader.exec_module(evaluation)
report_path, root, trace, tcheck = sys.argv[1:5]
log_dir = report_path + ".log"
hangs = [json.loads(line) for line in open(report_path) if '"hang"' in line]
fault = json.load(open(f"{log_dir}/rank-2.fault"))
assert hangs, "no hang reported"
if trace != "live":
    evaluation.translate(hangs, evaluation.nccl_hashes(tcheck, trace)[0])
rank_ok, collective_ok = evaluation.judge_hang(hangs[0], fault, log_dir, 4)
print("hang report:", json.dumps(hangs[0]))
assert rank_ok, "the first hang report names the wrong rank"
# Attached mid-run too: sequence numbers count from the communicator's start.
assert collective_ok, "the first hang report names the wrong collective or sequence number"
if trace != "live":
    # The first call the rank did not make, by its own pattern, on whichever communicator.
    assert evaluation.judge_missed_call(hangs[0], fault, log_dir), \
        "the first hang report names the wrong first call not made"
    if fault["where"] == "send":
        missed = hangs[0]["lagging_ranks"][0]["missed_call"]
        assert missed["function"] in ("ncclSend", "ncclRecv"), missed
        assert missed["comm_id"] != hangs[0]["comm_id"], "the send is on another communicator"
assert hangs[0]["class"] == "host", "a rank that never issued the call is a host-side hang"
PYTHON
}

# A rank that stops for ever before its pipeline send, recorded from the
# job's start (in a session of its own, so what is left of the job goes after):
# its peers go on to a collective it never issues, and the first call it did
# not make is the send or receive on its pipeline communicator.
mkdir -p "$SCRATCH/stall.jsonl.log"
setsid "$TCHECK" --quiet record --no-diagnosis -o "$SCRATCH/stall.trace" --duration 4 -- \
	"$WORKLOAD" --ranks 4 --steps 100000 --step-sleep-ms 60 --delay 2:12:send:0 \
	--log-dir "$SCRATCH/stall.jsonl.log" 2>"$SCRATCH/stall.err" &
session=$!
wait "$session" || fail "record exited $?: $(cat "$SCRATCH/stall.err")"
recording_ended=$(date +%s.%N)
kill -9 -- "-$session" 2>/dev/null || true
[ -e "$SCRATCH/stall.jsonl.log/rank-2.fault" ] || fail "the workload did not reach its fault"
status=0
"$TCHECK" check --json "$SCRATCH/stall.trace" >"$SCRATCH/stall.jsonl" || status=$?
[ $status -eq 1 ] || fail "check should exit 1 (findings) when it finds a hang, not $status"
expect_hang "$SCRATCH/stall.jsonl" "$ROOT" "$SCRATCH/stall.trace"
# Each finding's wall clock (RFC 3339, beside its monotonic detected_ns) is its
# monotonic time on the wall clock: the rank's fault file holds the monotonic
# time it stopped (start_ns) and was written just after (its mtime: a few ms
# later, more on a busy machine), so the finding lies detected_ns - start_ns
# after that moment, before the end of the recording. The silence that makes
# the hang starts at the job's last call, which can come while the stopped
# rank still computes the step before its stop (a 60 ms sleep, longer on a
# busy machine), so the finding comes at least --hang-min-seconds (1 s) less
# 0.15 s after the stop. The text line starts with the same time.
"$TCHECK" check "$SCRATCH/stall.trace" >"$SCRATCH/stall.txt" 2>/dev/null || true
python3 - "$SCRATCH/stall.jsonl" "$SCRATCH/stall.txt" \
	"$(stat -c %.9Y "$SCRATCH/stall.jsonl.log/rank-2.fault")" "$recording_ended" \
	"$SCRATCH/stall.jsonl.log/rank-2.fault" <<'PY' ||
import datetime, json, re, sys
stopped, ended = float(sys.argv[3]), float(sys.argv[4])
stopped_ns = json.load(open(sys.argv[5]))["start_ns"]
hangs = [json.loads(line) for line in open(sys.argv[1]) if '"kind":"hang"' in line]
assert hangs
for hang in hangs:
    text = hang["wall_clock"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", text), text
    at = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
    after_stop = (hang["detected_ns"] - stopped_ns) / 1e9
    assert stopped - 0.25 <= at - after_stop <= stopped + 0.01, (text, stopped, after_stop)
    assert after_stop >= 1 - 0.15 and at <= ended + 0.01, (text, after_stop, ended)
lines = [line for line in open(sys.argv[2]) if " hang: " in line]
assert [line.split()[1] for line in lines] == [h["wall_clock"] for h in hangs], lines
print("hang wall clock", hangs[0]["wall_clock"], f"{after_stop:.3f} s after the rank stopped")
PY
	fail "the hang's wall-clock time does not fit the recording"

# Blocking mode (as gloo, and NCCL's blocking paths): the ranks that came wait inside
# the collective, so only the calls in flight show who came and who did not. The
# trace keeps those calls as open ones; check names the rank that never issued it.
mkdir -p "$SCRATCH/blocking.jsonl.log"
# The recording is stopped (SIGINT, as an operator's Ctrl-C) once the live report is
# out, or after 30 s: a loaded machine stretches the start-up, 12 steps and a second of
# silence well past a fixed few seconds.
NCCL_DOUBLE_BLOCKING=1 setsid "$TCHECK" record --events "$SCRATCH/blocking-live.jsonl" \
	-o "$SCRATCH/blocking.trace" \
	--duration 30 -- "$WORKLOAD" --ranks 4 --steps 100000 --step-sleep-ms 60 \
	--delay 2:12:collective:0 --log-dir "$SCRATCH/blocking.jsonl.log" \
	>/dev/null 2>"$SCRATCH/blocking.err" &
session=$!
for _ in $(seq 300); do
	grep -q '"hang"' "$SCRATCH/blocking-live.jsonl" 2>/dev/null && break
	kill -0 "$session" 2>/dev/null || break
	sleep 0.1
done
# The recorder reads the calls still open as it stops (recorder_read_open_calls).
kill -INT "$session" 2>/dev/null || true
wait "$session" || fail "record exited $?: $(cat "$SCRATCH/blocking.err")"
kill -9 -- "-$session" 2>/dev/null || true
[ -e "$SCRATCH/blocking.jsonl.log/rank-2.fault" ] || fail "the workload did not reach its fault"
grep -q "never returned" "$SCRATCH/blocking.err" ||
	fail "record did not say calls were left open: $(cat "$SCRATCH/blocking.err")"
"$TCHECK" dump "$SCRATCH/blocking.trace" >"$SCRATCH/blocking.calls"
python3 - "$SCRATCH/blocking.calls" "$SCRATCH/blocking.jsonl.log" <<'PYTHON' ||
import json, sys
calls = [json.loads(line) for line in open(sys.argv[1])]
fault = json.load(open(sys.argv[2] + "/rank-2.fault"))
open_calls = [c for c in calls if c["kind"] == "nccl" and c["open"]]
print("open calls:", [(c["rank"], c["name"], c["seq"]) for c in open_calls])
stalled = {p["pid"] for p in calls if p["kind"] == "process" and p.get("rank") == 2}
assert stalled, "no process of job rank 2 in the trace"
# The others block inside collectives; the stalled rank is inside none (it sleeps).
assert open_calls, "no call kept open"
assert not any(c["pid"] in stalled for c in open_calls), "the stalled rank is not inside a call"
assert all(c["ret"] is None and c["dur_ns"] > 0 for c in open_calls)
assert all(c["ts_ns"] >= fault["start_ns"] - 200_000_000 for c in open_calls), "opened too early"
PYTHON
	fail "the open calls do not match the blocking run"
status=0
"$TCHECK" check --json "$SCRATCH/blocking.trace" >"$SCRATCH/blocking.jsonl" || status=$?
[ $status -eq 1 ] || fail "check should find the blocking hang (exit 1), not $status"
# The truth: rank 2 stopped before the step's world collectives, which open with an
# all-reduce of the gradient norm on the world communicator (first made, first in its
# log); its peers logged only the calls that returned, so the call it never issued is
# the one after the last its own log holds there.
python3 - "$SCRATCH/blocking.jsonl" "$ROOT" "$SCRATCH/blocking.trace" "$TCHECK" \
	"$SCRATCH/blocking.jsonl.log" <<'PYTHON' || fail "the blocking hang report does not match the workload's log"
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("evaluation", sys.argv[2] + "/tools/eval/hang-eval.py")
evaluation = importlib.util.module_from_spec(spec)
spec.loader.exec_module(evaluation)
report_path, root, trace, tcheck, log_dir = sys.argv[1:6]
hangs = [json.loads(line) for line in open(report_path) if '"hang"' in line]
assert hangs, "no hang reported"
evaluation.translate(hangs, evaluation.nccl_hashes(tcheck, trace)[0])
print("hang report:", json.dumps(hangs[0]))
calls, seqs = evaluation.rank_log(log_dir, 2)
world = calls[0]["args"]["comm_hash"]
assert [r["job_rank"] for r in hangs[0]["lagging_ranks"]] == [2], "wrong rank"
assert evaluation.comm_hex(hangs[0]["comm_id"]) == world, "not the world communicator"
assert hangs[0]["collective"] == "ncclAllReduce" and hangs[0]["seq"] == seqs[world], \
    ("wrong call", hangs[0]["collective"], hangs[0]["seq"], seqs[world])
assert hangs[0]["class"] == "host" and hangs[0]["ranks_inside"] == 3, "the others are inside it"
# Live, from the calls in flight: the same rank and call, as it happened.
live = [json.loads(line) for line in open(sys.argv[5] + "/../blocking-live.jsonl")
        if '"hang"' in line]
assert live, "no hang reported live"
print("live report:", json.dumps(live[0]))
assert [r["job_rank"] for r in live[0]["lagging_ranks"]] == [2], "wrong rank live"
assert live[0]["collective"] == "ncclAllReduce" and live[0]["ranks_inside"] == 3
assert int(live[0]["comm_id"], 16) == world
PYTHON

# Killed inside: the job is killed while its ranks wait inside the collective; the
# exit probe keeps each call its thread was inside, open until the kill.
mkdir -p "$SCRATCH/killed.log"
NCCL_DOUBLE_BLOCKING=1 "$TCHECK" record --no-diagnosis -o "$SCRATCH/killed.trace" -- \
	"$WORKLOAD" --ranks 4 --steps 100000 --step-sleep-ms 60 --delay 2:8:collective:0 \
	--log-dir "$SCRATCH/killed.log" >/dev/null 2>"$SCRATCH/killed.err" &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
wait_for_file "$SCRATCH/killed.log/rank-2.fault" 20
sleep 0.5
launcher=$(pgrep -P "$recorder")
killed_ns=$(python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))')
kill -9 $(pgrep -P "$launcher") "$launcher"
wait "$recorder" || true
"$TCHECK" dump "$SCRATCH/killed.trace" >"$SCRATCH/killed.jsonl" || fail "dump of the killed job"
python3 - "$SCRATCH/killed.jsonl" "$killed_ns" <<'PYTHON' || fail "the killed ranks' open calls are not in the trace: $(cat "$SCRATCH/killed.err")"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
killed_ns = int(sys.argv[2])
ranks = {p["pid"]: p.get("rank") for p in records if p["kind"] == "process" and p.get("rank") is not None}
open_calls = [c for c in records if c["kind"] == "nccl" and c["open"]]
print("open calls of the killed job:", [(ranks.get(c["pid"]), c["name"], c["seq"], c["dur_ns"]) for c in open_calls])
# Ranks 0, 1 and 3 were inside the world all-reduce rank 2 never joined; each until the kill.
assert sorted(ranks.get(c["pid"]) for c in open_calls) == [0, 1, 3]
assert all(c["name"] == "ncclAllReduce" for c in open_calls)
assert all(abs(c["ts_ns"] + c["dur_ns"] - killed_ns) < 500_000_000 for c in open_calls)
PYTHON

# Communicator creation, in both modes: rank 2 never enters ncclCommInitRank, the
# others wait inside it. After the start-up limit (10 s, the default) the
# communicator is reported as not created, naming rank 2, live and offline.
for blocking in 0 1; do
	mkdir -p "$SCRATCH/init$blocking.log"
	NCCL_DOUBLE_BLOCKING=$blocking setsid "$TCHECK" record --events "$SCRATCH/init$blocking.live" \
		-o "$SCRATCH/init$blocking.trace" --duration 13 -- "$WORKLOAD" --ranks 4 --steps 10 \
		--delay 2:0:init:0 --log-dir "$SCRATCH/init$blocking.log" >/dev/null \
		2>"$SCRATCH/init$blocking.err" &
	session=$!
	wait "$session" || fail "record exited $?: $(cat "$SCRATCH/init$blocking.err")"
	kill -9 -- "-$session" 2>/dev/null || true
	"$TCHECK" check --json "$SCRATCH/init$blocking.trace" >"$SCRATCH/init$blocking.jsonl" || true
	python3 - "$SCRATCH/init$blocking.live" "$SCRATCH/init$blocking.jsonl" \
		"$SCRATCH/init$blocking.log/rank-2.fault" <<'PYTHON' ||
import json, sys
fault = json.load(open(sys.argv[3]))
assert fault["where"] == "init", fault
for path in sys.argv[1:3]:
    hangs = [r for r in map(json.loads, open(path)) if r["kind"] == "hang"]
    assert len(hangs) == 1, (path, hangs)
    hang = hangs[0]
    assert hang["creating"] and hang["collective"] == "ncclCommInitRank", hang
    assert [r["rank"] for r in hang["lagging_ranks"]] == [fault["rank"]], hang
    assert hang["ranks_inside"] == 3 and hang["nranks"] == 4, hang
    assert hang["detected_ns"] - fault["start_ns"] >= 9e9, (hang, fault)
print("not created: rank", fault["rank"], "never entered ncclCommInitRank")
PYTHON
		fail "the communicator not created was not reported (blocking=$blocking): $(cat "$SCRATCH/init$blocking.err")"
done

# The same, found live by attach and written to --events.
mkdir -p "$SCRATCH/live.jsonl.log"
start_workload "$SCRATCH/live.jsonl.log" --delay 2:40:collective:0
"$TCHECK" --quiet attach --pid "$launcher" --duration 5 --events "$SCRATCH/live.jsonl" \
	>/dev/null 2>"$SCRATCH/live.err" || fail "attach exited $?"
kill -9 "$launcher"
grep -q "hang: communicator" "$SCRATCH/live.err" || fail "attach printed no hang: $(cat "$SCRATCH/live.err")"
expect_hang "$SCRATCH/live.jsonl" "$ROOT" live

# A fault-free run: nothing found, exit status 0.
mkdir -p "$SCRATCH/clean"
"$TCHECK" --quiet record --no-diagnosis -o "$SCRATCH/clean.trace" -- \
	"$WORKLOAD" --ranks 4 --steps 30 --step-sleep-ms 60 --log-dir "$SCRATCH/clean" ||
	fail "record of the fault-free run exited $?"
"$TCHECK" check "$SCRATCH/clean.trace" >"$SCRATCH/clean.out" ||
	fail "check found something in a fault-free run: $(cat "$SCRATCH/clean.out")"
grep -q "0 hang(s), 0 slowdown(s), 0 mismatch(es)" "$SCRATCH/clean.out" || fail "unexpected summary: $(cat "$SCRATCH/clean.out")"

# One slow step of rank 1 (two thirds of a step): named as the straggler.
mkdir -p "$SCRATCH/slow"
"$TCHECK" --quiet record --no-diagnosis -o "$SCRATCH/slow.trace" -- \
	"$WORKLOAD" --ranks 4 --steps 30 --step-sleep-ms 60 --delay 1:20:forward:40 \
	--log-dir "$SCRATCH/slow" || fail "record of the slowed run exited $?"
"$TCHECK" check --json "$SCRATCH/slow.trace" >"$SCRATCH/slow.jsonl" || true
python3 - "$SCRATCH/slow.jsonl" "$SCRATCH/slow/rank-1.fault" <<'PYTHON' || fail "the slowdown was not attributed to rank 1"
import json, sys
reports = [json.loads(line) for line in open(sys.argv[1])]
fault = json.load(open(sys.argv[2]))
end = fault["start_ns"] + fault["delay_ms"] * 1000000
slow = [r for r in reports if r["kind"] == "slowdown"
        and r["detected_ns"] - r["step_ns"] <= end and r["detected_ns"] >= fault["start_ns"]]
print("slowdown reports:", json.dumps(slow))
assert slow, "no slowdown report covers the injected delay"
assert [s["job_rank"] for s in slow[0]["stragglers"]] == [1], "wrong straggler"
PYTHON
# Bad input: a clear sentence and a non-zero exit.
status=0
"$TCHECK" check "$SCRATCH/missing.trace" 2>"$SCRATCH/bad.err" || status=$?
[ $status -eq 2 ] || fail "check of a missing file should exit 2 (unreadable input), not $status"
status=0
"$TCHECK" check --hang-factor -1 "$SCRATCH/clean.trace" 2>"$SCRATCH/bad.err" || status=$?
[ $status -eq 2 ] || fail "a negative --hang-factor should exit 2, not $status"
grep -q "needs a number above 0" "$SCRATCH/bad.err" || fail "no sentence for a bad --hang-factor"
