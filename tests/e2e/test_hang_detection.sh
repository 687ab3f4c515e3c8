#!/bin/bash
# Hangs and slowdowns of the NCCL test double's workload, injected with
# --delay, are found by `check` on a recorded trace and live by `attach`:
# the stalled rank, its communicator, the collective it never issued and
# that call's sequence number, against the workload's own fault file and
# call logs; the slowed rank named as the straggler; nothing on a run
# without a fault. Steps are 65 ms, as in the evaluation: on a busy two-core
# machine the whole job can stall for a 30 ms step or two, which is a real
# two-step silence (a hang) at that step length.
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
if trace != "live":
    assert collective_ok, "the first hang report names the wrong collective or sequence number"
assert hangs[0]["class"] == "host", "a rank that never issued the call is a host-side hang"
PYTHON
}

# A rank that stops for ever before its forward compute, recorded from the
# job's start (in a session of its own, so what is left of the job goes after).
mkdir -p "$SCRATCH/stall.jsonl.log"
setsid "$TCHECK" --quiet record --no-diagnosis -o "$SCRATCH/stall.trace" --duration 4 -- \
	"$WORKLOAD" --ranks 4 --steps 100000 --step-sleep-ms 60 --delay 2:12:forward:0 \
	--log-dir "$SCRATCH/stall.jsonl.log" 2>"$SCRATCH/stall.err" &
session=$!
wait "$session" || fail "record exited $?: $(cat "$SCRATCH/stall.err")"
kill -9 -- "-$session" 2>/dev/null || true
[ -e "$SCRATCH/stall.jsonl.log/rank-2.fault" ] || fail "the workload did not reach its fault"
status=0
"$TCHECK" check --json "$SCRATCH/stall.trace" >"$SCRATCH/stall.jsonl" || status=$?
[ $status -eq 3 ] || fail "check should exit 3 when it finds a hang, not $status"
expect_hang "$SCRATCH/stall.jsonl" "$ROOT" "$SCRATCH/stall.trace"

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
grep -q "0 hang(s), 0 slowdown(s)" "$SCRATCH/clean.out" || fail "unexpected summary: $(cat "$SCRATCH/clean.out")"

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
[ $status -eq 1 ] || fail "check of a missing file should exit 1, not $status"
status=0
"$TCHECK" check --hang-factor -1 "$SCRATCH/clean.trace" 2>"$SCRATCH/bad.err" || status=$?
[ $status -eq 2 ] || fail "a negative --hang-factor should exit 2, not $status"
grep -q "positive number" "$SCRATCH/bad.err" || fail "no sentence for a bad --hang-factor"
