#!/bin/bash
# Crash reports: a traced process that dies is reported with how it ended,
# its step, its last calls and where the other ranks stood, held against
# what the workloads log about themselves before they die:
# - a 2-rank gloo DDP job whose rank 1 raises RuntimeError before its
#   backward pass at step 6: the report names job rank 1, an exit status of
#   1, step 6, the exception's type and message and the function that raised
#   it, its last calls (gloo collectives) and rank 0's process;
# - the same job whose rank 1 stops at step 6 and is then killed with
#   SIGKILL from outside: "killed", SIGKILL, step 6;
# - the C workload over the NCCL test double whose rank 2 writes through a
#   null pointer at step 5: SIGSEGV, its last NCCL calls, every rank of its
#   world communicator with its last call;
# - nccl-api-tour, whose ranks pass bad arguments on purpose: each rank's first
#   call that returned an error is reported as an NCCL error, once per rank;
# - a healthy job started by a shell that first runs a helper failing by
#   design (`mountpoint -q` of a directory that is no mount point): the
#   helper is traced and its status recorded as the shell got it, but
#   nothing is reported as a crash, live or offline, nor marked as one on
#   the timeline; check -v says why; 20 helpers that end at once are each
#   named by the command they ran (not their shell's, nor "");
# - check of each trace reports the same crash offline.
source "$(dirname "$0")/lib.sh"
torch_stack
DDP="$ROOT/tests/workloads/python/train_ddp.py"
NCCL_WORKLOAD="$ROOT/.output/tests/nccl-workload"

mkdir -p "$SCRATCH/raise" "$SCRATCH/kill" "$SCRATCH/segv"
"$TCHECK" record --python --events "$SCRATCH/raise/events.jsonl" -o "$SCRATCH/raise/trace" -- \
	$TORCH_PYTHON "$DDP" --steps 12 --fault raise:1:6 --timeout 30 \
	--log-dir "$SCRATCH/raise/log" >"$SCRATCH/raise/out" 2>&1 && fail "the raising job exited 0"
"$TCHECK" check --json "$SCRATCH/raise/trace" >"$SCRATCH/raise/check.jsonl" || true

# Killed from outside: the rank that stopped is killed once it logged its stop.
"$TCHECK" record --python --events "$SCRATCH/kill/events.jsonl" -o "$SCRATCH/kill/trace" -- \
	$TORCH_PYTHON "$DDP" --steps 12 --fault stop:1:6 --timeout 30 \
	--log-dir "$SCRATCH/kill/log" >"$SCRATCH/kill/out" 2>&1 &
recorder=$!
for _ in $(seq 300); do
	grep -qs '"kind": "fault"' "$SCRATCH/kill/log/rank-1.jsonl" && break
	sleep 0.1
done
victim=$(python3 -c 'import json, sys
print(next(r["pid"] for r in map(json.loads, open(sys.argv[1])) if r.get("kind") == "fault"))' \
	"$SCRATCH/kill/log/rank-1.jsonl") || fail "rank 1 never logged its stop"
kill -KILL "$victim"
wait "$recorder" || true
"$TCHECK" check --json "$SCRATCH/kill/trace" >"$SCRATCH/kill/check.jsonl" || true

"$TCHECK" record --events "$SCRATCH/segv/events.jsonl" -o "$SCRATCH/segv/trace" -- \
	"$NCCL_WORKLOAD" --ranks 4 --steps 10 --crash 2:5 --log-dir "$SCRATCH/segv/log" \
	>"$SCRATCH/segv/out" 2>&1 && fail "the crashing workload exited 0"
"$TCHECK" check --json "$SCRATCH/segv/trace" >"$SCRATCH/segv/check.jsonl" || true

mkdir -p "$SCRATCH/tour"
"$TCHECK" record --events "$SCRATCH/tour/events.jsonl" -o "$SCRATCH/tour/trace" -- \
	"$ROOT/.output/tests/nccl-api-tour" --log-dir "$SCRATCH/tour/log" >"$SCRATCH/tour/out" 2>&1 ||
	fail "record of the API tour exited $?: $(tail -3 "$SCRATCH/tour/out")"
"$TCHECK" check --json "$SCRATCH/tour/trace" >"$SCRATCH/tour/check.jsonl" || true

# A helper failing by design; the shell writes the status it got.
mkdir -p "$SCRATCH/helper"
"$TCHECK" record --python --events "$SCRATCH/helper/events.jsonl" -o "$SCRATCH/helper/trace" -- \
	bash -c 'mountpoint -q "$1"; echo $? >"$2"; shift 2; exec "$@"' helper "$SCRATCH/helper" \
	"$SCRATCH/helper/status" $TORCH_PYTHON "$ROOT/tests/workloads/python/train_cpu.py" \
	--steps 3 >"$SCRATCH/helper/out" 2>&1 ||
	fail "record of the healthy job with a failing helper exited $?: $(tail -3 "$SCRATCH/helper/out")"
"$TCHECK" -v check --json "$SCRATCH/helper/trace" >"$SCRATCH/helper/check.jsonl" \
	2>"$SCRATCH/helper/check.err" ||
	fail "check of the healthy job with a failing helper exited $?"
"$TCHECK" dump --format jsonl -o "$SCRATCH/helper/dump.jsonl" "$SCRATCH/helper/trace" ||
	fail "dump of the healthy job with a failing helper"
# Helpers that end at once, named by what they ran: 20 in a row, each gone
# before /proc could be read (its command comes with its exec).
"$TCHECK" --quiet record -o "$SCRATCH/helper/quick.trace" -- \
	bash -c 'for i in $(seq 20); do /bin/true "quick-$i"; done' >"$SCRATCH/helper/quick.out" 2>&1 ||
	fail "record of 20 quick helpers exited $?: $(tail -3 "$SCRATCH/helper/quick.out")"
"$TCHECK" dump --format jsonl -o "$SCRATCH/helper/quick.jsonl" "$SCRATCH/helper/quick.trace" ||
	fail "dump of 20 quick helpers"
"$TCHECK" dump --format perfetto -o "$SCRATCH/helper/perfetto.json" "$SCRATCH/helper/trace" ||
	fail "perfetto export of the healthy job with a failing helper"

# The crashes are marked on the Perfetto timeline, on the crashed process's track.
"$TCHECK" dump --format perfetto -o "$SCRATCH/raise/perfetto.json" "$SCRATCH/raise/trace" ||
	fail "perfetto export of the raising job"
"$TCHECK" dump --format perfetto -o "$SCRATCH/segv/perfetto.json" "$SCRATCH/segv/trace" ||
	fail "perfetto export of the crashing workload"

python3 - "$SCRATCH" <<'PY' || fail "the crash reports do not match what the workloads logged"
import glob, json, os, sys
scratch = sys.argv[1]

def jsonl(path):
    return [json.loads(line) for line in open(path) if line.strip()]

def crashes(name):
    live = [r for r in jsonl(os.path.join(scratch, name, "events.jsonl")) if r["kind"] == "crash"]
    offline = [r for r in jsonl(os.path.join(scratch, name, "check.jsonl")) if r.get("kind") == "crash"]
    return live, offline

def ddp_log(name, rank):
    return jsonl(os.path.join(scratch, name, "log", f"rank-{rank}.jsonl"))

def of_pid(reports, pid):
    found = [r for r in reports if r["pid"] == pid]
    assert len(found) == 1, (pid, reports)
    return found[0]

def peers_seen(report, pids):
    standing = {r["pid"] for comm in report["communicators"] for r in comm["ranks"]}
    assert set(pids) <= standing, (pids, report["communicators"])

# Raise: job rank 1 exited with status 1 at the step it logged, unless the
# launcher stopped it first (rank 0 failing on the lost peer can end before
# rank 1's exception hook does): then SIGTERM, as the launcher says.
for name, reason in (("raise", "exit"), ("kill", "killed")):
    launcher_said = open(os.path.join(scratch, name, "out")).read()
    if name == "raise" and "train_ddp: rank 1 stopped by the launcher, status 143" in launcher_said:
        reason = "signal"
    fault = next(r for r in ddp_log(name, 1) if r.get("kind") == "fault")
    peer_pid = next(r["pid"] for r in ddp_log(name, 0) if "pid" in r)
    live, offline = crashes(name)
    for report in (of_pid(live, fault["pid"]), of_pid(offline, fault["pid"])):
        assert report["job_rank"] == 1 and report["reason"] == reason, report
        assert report["step"] == fault["step"], (report["step"], fault)
        if reason == "signal":
            assert report["signal"] == "SIGTERM", report
        if reason in ("exit", "signal"):
            if reason == "exit":
                assert report["exit_status"] == 1 and report["signal"] is None, report
            # The exception, read as the interpreter printed it: type, message, the
            # function that raised it (innermost first).
            exception = report["exception"]
            assert exception and exception["type"] == fault["exception"], report
            assert exception["message"] == fault["message"], (exception, fault)
            assert exception["python_stack"][0].endswith("fault_before_backward.<locals>.hook"), \
                exception
        else:
            assert report["exception"] is None, report
        if reason == "killed":
            assert report["signal"] == "SIGKILL", report
        calls = report["last_calls"]
        assert calls and all(c["function"].startswith("c10d::") for c in calls), calls
        assert len(calls) <= 16, len(calls)
        peers_seen(report, [fault["pid"], peer_pid])
    print(f"{name}: job rank 1 (pid {fault['pid']}) {reason} at step {fault['step']}, "
          f"last call {calls[-1]['function']} seq {calls[-1]['seq']}")

# SIGSEGV in the C workload: its fault file, its call log, every rank standing.
fault = json.load(open(os.path.join(scratch, "segv", "log", "rank-2.fault")))
rank_calls = jsonl(os.path.join(scratch, "segv", "log", "rank-2.jsonl"))
live, offline = crashes("segv")
segv = [r for r in live if r["job_rank"] == 2]
assert len(segv) == 1, live
for report in (segv[0], [r for r in offline if r["job_rank"] == 2][0]):
    assert report["reason"] == "signal" and report["signal"] == "SIGSEGV", report
    calls = report["last_calls"]
    # Error polls that found none are not traced (the recorder keeps failed polls only).
    logged = [c["name"] for c in rank_calls
              if c["name"].startswith("nccl") and c["name"] != "ncclCommGetAsyncError"]
    assert [c["function"] for c in calls] == logged[-len(calls):], (calls, logged[-len(calls):])
    world = [comm for comm in report["communicators"] if comm["nranks"] == 4]
    assert world and all(r["last_function"] for r in world[0]["ranks"]), report["communicators"]
# NCCL errors: each tour rank's first failing call, live and offline.
RESULTS = ["ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
           "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"]
live, offline = crashes("tour")
for path in glob.glob(os.path.join(scratch, "tour", "log", "*.jsonl")):
    tour_calls = jsonl(path)
    failed = [c for c in tour_calls if c.get("ret") not in (0, 7, None)]
    if not failed:
        continue
    pid = failed[0]["pid"]
    for report in (of_pid(live, pid), of_pid(offline, pid)):
        assert report["reason"] == "nccl_error", report
        assert report["nccl_function"] == failed[0]["name"], (report, failed[0])
        assert report["nccl_error"] == RESULTS[failed[0]["ret"]], (report, failed[0])
    print(f"tour: pid {pid} got {report['nccl_error']} from {report['nccl_function']} first")
def marks(name):
    document = json.load(open(os.path.join(scratch, name, "perfetto.json")))
    return [(e["name"], e["tid"]) for e in document["traceEvents"]
            if e.get("ph") == "i" and e.get("cat") == "crash"]
raise_fault = next(r for r in ddp_log("raise", 1) if r.get("kind") == "fault")
assert ("crash: uncaught RuntimeError", raise_fault["pid"]) in marks("raise"), marks("raise")
raise_stopped = "rank 1 stopped by the launcher, status 143" in open(
    os.path.join(scratch, "raise", "out")).read()
assert ("crash: Terminated (signal 15)" if raise_stopped else "crash: exit status 1",
        raise_fault["pid"]) in marks("raise"), marks("raise")
assert any(n.startswith("crash: Segmentation fault") and pid == segv[0]["pid"]
           for n, pid in marks("segv")), marks("segv")
# The helper: traced, its status recorded as the shell got it, no crash anywhere.
status = int(open(os.path.join(scratch, "helper", "status")).read())
assert status != 0, "the helper succeeded: the case tests nothing"
ended = [r for r in jsonl(os.path.join(scratch, "helper", "dump.jsonl"))
         if r["kind"] == "process" and r["exit_code"] is not None
         and r["command"] == f"mountpoint -q {os.path.join(scratch, 'helper')}"]
assert len(ended) == 1 and ended[0]["exit_code"] == status << 8, (ended, status)
live, offline = crashes("helper")
assert not live and not offline, (live, offline)
assert not marks("helper"), marks("helper")
said = f"process {ended[0]['pid']} ({ended[0]['command']}) exited with status {status}: a helper"
assert said in open(os.path.join(scratch, "helper", "check.err")).read(), said
print(f"helper: mountpoint exited with status {status}, no crash reported")
quick = {r["pid"]: r["command"] for r in jsonl(os.path.join(scratch, "helper", "quick.jsonl"))
         if r["kind"] == "process" and r["exit_code"] is not None}
wanted = {f"/bin/true quick-{i}" for i in range(1, 21)}
assert wanted <= set(quick.values()), sorted(wanted - set(quick.values()))
print("helper: 20 quick helpers each named by the command it ran")
print(f"segv: job rank 2 died of SIGSEGV at step {fault['step']}, last call "
      f"{segv[0]['last_calls'][-1]['function']}; {len(segv[0]['communicators'])} "
      "communicator(s) standing")
PY
echo "PASS"
