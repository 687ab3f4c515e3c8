#!/bin/bash
# PyTorch's own collectives: CPU DistributedDataParallel over gloo makes no
# NCCL call, and `record --python` traces its c10d collectives instead
# (ProcessGroupGloo::allreduce, broadcast, barrier, ...). Each run injects
# one fault, logged by the workload itself before it happens (a "fault"
# record: the rank, the step, what it does), and the report is held against
# that log:
# - a rank that stops before its backward pass: a hang naming that rank, the
#   collective it never issued (the step's all-reduce) and its last one, live
#   (--events) and offline (check) alike, the other rank inside that
#   all-reduce, its work unfinished (an open call in the trace);
# - a rank that sleeps before each backward from step K: slowdowns naming it
#   as the straggler, none before step K;
# - a rank that all-reduces a tensor of another size (3 ranks): a mismatch
#   naming that rank and both element counts the ranks logged;
# - a fault-free run: no hang or mismatch, and a slowdown only where the straggler's
#   own log shows that step slow (a busy host's noise).
# e2e-alone: a slowdown (20 ms floor) is allowed only where a rank's own log shows it slow
source "$(dirname "$0")/lib.sh"
torch_stack
# The time limits leave room for three ranks importing torch 2.6 under
# --python on two cores (over 20 s at times); a mismatch run ends itself
# when gloo aborts, a stopped rank's run 10 s after the stop (its launcher then
# stops the ranks, as at its limit).
ddp_run stop --steps 40 --fault stop:1:15 --timeout 45 --end-after-stop 10
ddp_run slow --steps 30 --fault slow:1:15:200
ddp_run mismatch --world-size 3 --steps 12 --fault mismatch:1:6 --timeout 90
ddp_run clean --steps 30
"$TCHECK" check "$SCRATCH/clean/trace" >"$SCRATCH/clean/check.txt" || true

python3 - "$SCRATCH" <<'PY' || fail "the reports do not match what the workload logged"
import glob, json, os, sys
scratch = sys.argv[1]

def jsonl(path):
    return [json.loads(line) for line in open(path) if line.strip()]

def fault_of(name):
    faults = [r for path in glob.glob(os.path.join(scratch, name, "log", "rank-*.jsonl"))
              for r in jsonl(path) if r.get("kind") == "fault"]
    if not faults:
        out = open(os.path.join(scratch, name, "out")).read().splitlines()
        raise AssertionError("the {} run logged no fault; its output ends:\n{}".format(
            name, "\n".join(out[-8:])))
    return faults

def reports(name, kind):
    live = [r for r in jsonl(os.path.join(scratch, name, "events.jsonl")) if r["kind"] == kind]
    offline = [r for r in jsonl(os.path.join(scratch, name, "check.jsonl")) if r.get("kind") == kind]
    return live, offline

# The trace holds the gloo collectives, with ranks from the process group.
calls = [r for r in jsonl(os.path.join(scratch, "clean", "calls.jsonl")) if r["kind"] == "nccl"]
allreduces = [c for c in calls if c["name"] == "c10d::allreduce"]
assert {c["rank"] for c in allreduces} == {0, 1}, "no gloo all-reduce of both ranks in the trace"
assert len({c["comm_id"] for c in allreduces}) == 1, "the ranks' all-reduces are on several groups"
assert all(c["args"]["dtype"] == "Float" and c["args"]["count"] > 0 for c in allreduces), allreduces[0]
per_rank = {r: [c for c in allreduces if c["rank"] == r] for r in (0, 1)}
assert len(per_rank[0]) == len(per_rank[1]) >= 30, {r: len(v) for r, v in per_rank.items()}
# Each lasts until its work ended on a worker thread: the run finished every step.
backwards = [r for r in jsonl(os.path.join(scratch, "clean", "log", "rank-0.jsonl"))
             if r.get("api") == "torch._tensor.Tensor.backward"]
assert len(backwards) == 30, len(backwards)
assert all(c["work"] == "ended" and c["dur_ns"] > 0 and not c["open"] for c in allreduces), \
    [c for c in allreduces if c["work"] != "ended" or c["dur_ns"] <= 0][:2]
# Each carries its thread's time waiting for a CPU so far, which only grows.
for thread in {(c["pid"], c["tid"]) for c in allreduces}:
    waits = [c["args"]["cpu_wait_ns"] for c in allreduces if (c["pid"], c["tid"]) == thread]
    assert all(w and w > 0 for w in waits) and waits == sorted(waits), (thread, waits)

# Stop: the hang names the rank that stopped and the all-reduce it never issued.
fault = fault_of("stop")[0]
live, offline = reports("stop", "hang")
assert live and offline, ("no hang reported", live, offline)
# One stall, one report: the stopped ranks' step progress is not another.
assert len(live) == len(offline) == 1, (live, offline)
for hang in (live[0], offline[0]):
    lagging = hang["lagging_ranks"]
    assert [r["job_rank"] for r in lagging] == [fault["rank"]], hang
    assert hang["collective"] == fault["next_call"], hang
    assert lagging[0]["last_seq"] + 1 == hang["seq"], hang
    assert lagging[0]["last_ts_ns"] <= fault["ts_ns"], (hang, fault)
    assert hang["class"] == "host", hang
    # The rank that came waits inside the all-reduce, its work unfinished.
    assert hang["ranks_inside"] == 1, hang
# The trace keeps that wait as an open call: the other rank's all-reduce the stopped one never
# joined, its work unfinished when the run ended; the stopped rank has none.
stop_calls = [r for r in jsonl(os.path.join(scratch, "stop", "calls.jsonl")) if r["kind"] == "nccl"]
unfinished = [c for c in stop_calls if c["work"] == "unfinished"]
assert [(c["rank"], c["seq"], c["open"]) for c in unfinished] == \
    [(1 - fault["rank"], live[0]["seq"], True)], unfinished
print("stop: hang at", live[0]["collective"], "seq", live[0]["seq"], "names job rank",
      live[0]["lagging_ranks"][0]["job_rank"])

# Slow: every slowdown names the slow rank, and none comes before its first sleep.
fault = fault_of("slow")[0]
live, offline = reports("slow", "slowdown")
assert live and offline, ("no slowdown reported", live, offline)
for slowdown in live + offline:
    assert [s["job_rank"] for s in slowdown["stragglers"]] == [fault["rank"]], slowdown
    assert slowdown["detected_ns"] > fault["ts_ns"], (slowdown, fault)
    assert slowdown["lead_ns"] >= 0.5 * fault["sleep_ms"] * 1e6, slowdown
print("slow:", len(live), "slowdown(s), straggler job rank", fault["rank"])

# Mismatch: the odd rank and both counts, as the ranks logged them.
faults = fault_of("mismatch")
elements = {f["rank"]: f["elements"] for f in faults}
odd_rank = faults[0]["fault_rank"]
live, offline = reports("mismatch", "mismatch")
assert live and offline, ("no mismatch reported", live, offline)
for mismatch in (live[0], offline[0]):
    odd = mismatch["ranks"][mismatch["odd_rank"]]
    assert odd["job_rank"] == odd_rank and odd["last_count"] == elements[odd_rank], mismatch
    assert {r["job_rank"]: r["last_count"] for r in mismatch["ranks"]} == elements, mismatch
    assert mismatch["collective"] == "c10d::allreduce", mismatch
print("mismatch: job rank", odd_rank, "all-reduced", elements[odd_rank], "elements, the others",
      elements[(odd_rank + 1) % len(elements)])

# Clean: no hang or mismatch, and every slowdown borne out by the straggler's own log
# (slowdowns_borne_out.py, run after this); check's summary counts them.
live = jsonl(os.path.join(scratch, "clean", "events.jsonl"))
offline = jsonl(os.path.join(scratch, "clean", "check.jsonl"))
assert all(r["kind"] == "slowdown" for r in live + offline), (live, offline)
text = open(os.path.join(scratch, "clean", "check.txt")).read()
assert "0 hang(s), {} slowdown(s), 0 mismatch(es)".format(len(offline)) in text, text
print("clean: check counts", len(offline), "slowdown(s)")
PY
python3 "$ROOT/tests/e2e/slowdowns_borne_out.py" "$SCRATCH/clean" "$SCRATCH/clean/events.jsonl" \
	"$SCRATCH/clean/check.jsonl" || fail "the fault-free run: a report its logs do not bear out"
echo "PASS"
