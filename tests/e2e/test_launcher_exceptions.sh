#!/bin/bash
# The exception that ends a worker, when its launcher catches it: held
# against what tests/workloads/python/launcher_exceptions.py logs before it
# raises (pid, step, type, message, the raising function):
# - torch.multiprocessing.spawn, whose worker wrapper catches the worker's
#   ValueError, queues its text and calls sys.exit(1): the worker's own
#   crash report (live and from check) has the exception, flagged as
#   handled at exit, at the step it logged; the parent's report has its
#   uncaught ProcessRaisedException; the other worker's report, if any,
#   has no exception; dump and Perfetto carry it;
# - torch.distributed.elastic's @record, which catches, writes its error
#   file and raises again: the uncaught ValueError is in the report, and
#   elastic's error file names the same message;
# - healthy shapes: the same spawn job with no fault, and a script whose
#   handlers call sys.exit(1) in a thread (which ends only the thread) and
#   sys.exit(0) in the main thread: no crash, no exception record.
source "$(dirname "$0")/lib.sh"
torch_stack
SCRIPT="$ROOT/tests/workloads/python/launcher_exceptions.py"

# record_run NAME ARGS...: records the workload into $SCRATCH/NAME.
record_run() {
	local name=$1 status=0
	shift
	mkdir -p "$SCRATCH/$name"
	"$TCHECK" record --python --events "$SCRATCH/$name/events.jsonl" -o "$SCRATCH/$name/trace" \
		-- $TORCH_PYTHON "$@" >"$SCRATCH/$name/out" 2>&1 || status=$?
	echo "$status" >"$SCRATCH/$name/status"
	"$TCHECK" check --json "$SCRATCH/$name/trace" >"$SCRATCH/$name/check.jsonl" 2>/dev/null || true
	"$TCHECK" dump -o "$SCRATCH/$name/dump.jsonl" "$SCRATCH/$name/trace" ||
		fail "dump of the $name run: $(tail -3 "$SCRATCH/$name/out")"
	"$TCHECK" dump --format perfetto -o "$SCRATCH/$name/perfetto.json" "$SCRATCH/$name/trace" ||
		fail "perfetto export of the $name run"
}

record_run spawn "$SCRIPT" --launcher spawn --world-size 2 --steps 6 --fault-rank 1 \
	--fault-step 3 --log-dir "$SCRATCH/spawn/log"
TORCHELASTIC_ERROR_FILE="$SCRATCH/elastic/error.json" record_run elastic "$SCRIPT" \
	--launcher elastic --steps 6 --fault-rank 0 --fault-step 2 --log-dir "$SCRATCH/elastic/log"
record_run healthy "$SCRIPT" --launcher spawn --world-size 2 --steps 4 --fault-rank 9 \
	--log-dir "$SCRATCH/healthy/log"
cat >"$SCRATCH/clean_exit.py" <<'PY'
import sys, threading
def refuse():
    raise ValueError("handled on purpose")
def worker():
    try:
        refuse()
    except ValueError:
        sys.exit(1)  # ends this thread only
thread = threading.Thread(target=worker)
thread.start()
thread.join()
try:
    refuse()
except ValueError:
    print("caught; exiting 0")
    sys.exit(0)
PY
record_run clean_exit "$SCRATCH/clean_exit.py"

python3 - "$SCRATCH" <<'PY' || fail "the crash reports do not match what the workloads logged"
import json, os, sys
scratch = sys.argv[1]

def jsonl(path):
    return [json.loads(line) for line in open(path) if line.strip()]

def status(name):
    return int(open(os.path.join(scratch, name, "status")).read())

def reports(name):
    live = [r for r in jsonl(os.path.join(scratch, name, "events.jsonl")) if r["kind"] == "crash"]
    offline = [r for r in jsonl(os.path.join(scratch, name, "check.jsonl"))
               if r.get("kind") == "crash"]
    return live, offline

def of_pid(found, pid):
    mine = [r for r in found if r["pid"] == pid]
    assert len(mine) == 1, (pid, found)
    return mine[0]

def exceptions(name):
    return [r for r in jsonl(os.path.join(scratch, name, "dump.jsonl"))
            if r.get("kind") == "exception"]

def crash_marks(name):
    trace = json.load(open(os.path.join(scratch, name, "perfetto.json")))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    return [(e["name"], e["pid"]) for e in events if e.get("cat") == "crash"]

def check_exception(report, logged, handled):
    exception = report["exception"]
    assert exception, report
    assert exception["type"] == logged["type"], (exception, logged)
    assert exception["message"] == logged["message"], (exception, logged)
    assert exception["python_stack"][0].split(".")[-1] == logged["function"], exception
    assert exception["handled_at_exit"] is handled, exception
    assert report["reason"] == "exit" and report["exit_status"] == 1, report
    assert report["step"] == logged["step"], (report["step"], logged)

# mp.spawn: the raising worker's own report, live and offline.
assert status("spawn") == 1, status("spawn")
raised = next(r for r in jsonl(os.path.join(scratch, "spawn", "log", "rank-1.jsonl"))
              if r["kind"] == "raise")
live, offline = reports("spawn")
for found in (live, offline):
    check_exception(of_pid(found, raised["pid"]), raised, True)
    # The launcher's own end: the uncaught ProcessRaisedException.
    parents = [r for r in found if r["exception"] and r["exception"]["type"] ==
               "ProcessRaisedException"]
    assert len(parents) == 1 and not parents[0]["exception"]["handled_at_exit"], found
    # Every other process (the healthy worker, stopped by the launcher or ended) raised
    # nothing. That worker may be stopped before it logs even its start, so it is not
    # looked for by its log's pid.
    others = [r for r in found if r["pid"] != raised["pid"] and r not in parents]
    assert all(r["exception"] is None for r in others), found
worker_exceptions = [r for r in exceptions("spawn") if r["pid"] == raised["pid"]]
assert len(worker_exceptions) == 1, worker_exceptions
assert worker_exceptions[0]["name"] == "ValueError", worker_exceptions
assert worker_exceptions[0]["handled_at_exit"] is True, worker_exceptions
assert worker_exceptions[0]["args"]["message"] == raised["message"], worker_exceptions
assert ("crash: ValueError (caught, then sys.exit)", raised["pid"]) in crash_marks("spawn"), \
    crash_marks("spawn")
print(f"spawn: worker {raised['pid']} ValueError at step {raised['step']} in its own report")

# elastic @record: caught, written, raised again.
assert status("elastic") == 1, status("elastic")
raised = next(r for r in jsonl(os.path.join(scratch, "elastic", "log", "rank-0.jsonl"))
              if r["kind"] == "raise")
error_file = json.load(open(os.path.join(scratch, "elastic", "error.json")))
assert raised["message"] in error_file["message"]["message"], error_file
for found in reports("elastic"):
    check_exception(of_pid(found, raised["pid"]), raised, False)
print(f"elastic: process {raised['pid']} ValueError at step {raised['step']}")

# Healthy shapes: nothing reported, no exception recorded.
for name in ("healthy", "clean_exit"):
    assert status(name) == 0, (name, status(name), open(os.path.join(scratch, name, "out")).read())
    live, offline = reports(name)
    assert not live and not offline, (name, live, offline)
    assert not exceptions(name), (name, exceptions(name))
    assert not crash_marks(name), (name, crash_marks(name))
print("healthy spawn job, sys.exit(1) in a thread's handler and sys.exit(0) in the main "
      "thread's: no crash, no exception")
PY
echo "PASS: launcher-caught exceptions are in the worker's own crash report"
