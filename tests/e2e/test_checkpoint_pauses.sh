#!/bin/bash
# Healthy pauses are no hang. A 2-rank gloo DistributedDataParallel job
# whose rank 0 saves a checkpoint (torch.save, about 3 s) every 10 steps
# while rank 1 waits in its all-reduce, recorded with `record --python` as
# the README says, and judged live (--events) and offline (check):
# - no hang, no slowdown near a checkpoint, either way (elsewhere only one the
#   straggler's own log shows: two ranks on two CPUs); each pause reported as a
#   pause of job rank 0, doing file I/O, matched against the checkpoint the
#   workload logged (its start and end), the same pauses live and offline;
# - the same job whose rank 0 then stops for good (sleeps, never issuing
#   its all-reduce): its pauses (and slowdowns only as above), then one hang naming job rank 0, within the
#   usual limit of its last call, live and offline (its launcher stops the
#   ranks 10 s after the stop).
# A healthy run that hangs in torch's own teardown is judged as a hang (below)
# and run again.
# e2e-alone: no slowdown near a checkpoint, and each pause is held to within a second
source "$(dirname "$0")/lib.sh"
torch_stack
ddp_run pauses --steps 35 --checkpoint-every 10 --checkpoint-seconds 3 --timeout 100
healthy=pauses
# A rank of the healthy job can itself hang now and then in torch's teardown after its
# last collective (pytorch#75097), even after its log's summary (in the destructors
# that run as its training function returns); its launcher then stops it, prints its
# stacks and says which rank it stopped. Such a run is no healthy one: the hang must be
# said, naming only ranks the launcher had to stop, and the healthy job is run once more.
if grep -q "ranks still running after" "$SCRATCH/pauses/out"; then
	echo "the healthy job hung (its launcher's words and the ranks' stacks follow); run again"
	sed -n '/ranks still running after/,$p' "$SCRATCH/pauses/out"
	python3 - "$SCRATCH/pauses" <<'PY' || fail "the hang of the healthy job was not said as its launcher saw it"
import json, os, re, sys
run = sys.argv[1]
stopped = {int(m.group(1)) for m in re.finditer(r"train_ddp: rank (\d+) stopped by the launcher",
                                                 open(os.path.join(run, "out")).read())}
hangs = [r for r in map(json.loads, filter(str.strip, open(os.path.join(run, "events.jsonl"))))
         if r.get("kind") == "hang"]
assert stopped and hangs, (stopped, hangs)
for hang in hangs:
    assert {r["job_rank"] for r in hang["lagging_ranks"]} <= stopped, (stopped, hang)
print("the hang names job rank(s) {} of {} the launcher stopped".format(
    sorted({r["job_rank"] for h in hangs for r in h["lagging_ranks"]}), sorted(stopped)))
PY
	healthy=pauses-again
	ddp_run $healthy --steps 35 --checkpoint-every 10 --checkpoint-seconds 3 --timeout 100
fi
ddp_run stop --steps 40 --checkpoint-every 10 --checkpoint-seconds 3 --fault stop:0:25 --timeout 70 \
	--end-after-stop 10

python3 - "$SCRATCH" "$healthy" <<'PY' || fail "the reports do not match what the workload logged"
import json, os, sys
scratch, healthy = sys.argv[1], sys.argv[2]

def jsonl(path):
    return [json.loads(line) for line in open(path) if line.strip()]

def logged(name, kind):
    return [r for r in jsonl(os.path.join(scratch, name, "log", "rank-0.jsonl"))
            if r.get("kind") == kind]

def findings(name):
    return (jsonl(os.path.join(scratch, name, "events.jsonl")),
            [r for r in jsonl(os.path.join(scratch, name, "check.jsonl")) if "kind" in r])

def check_pauses(name, pauses, checkpoints):
    assert len(pauses) == len(checkpoints), (name, pauses, checkpoints)
    for pause, checkpoint in zip(pauses, checkpoints):
        assert pause["job_rank"] == 0 and pause["pid"] == checkpoint["pid"], (pause, checkpoint)
        assert pause["doing"] == "file_io", pause
        # It starts at rank 0's last call before the checkpoint and ends at its next one.
        assert checkpoint["ts_ns"] - 1.0e9 <= pause["start_ns"] <= checkpoint["ts_ns"], \
            (pause, checkpoint)
        assert checkpoint["end_ns"] <= pause["end_ns"] <= checkpoint["end_ns"] + 1.0e9, \
            (pause, checkpoint)
        assert pause["storage_bytes"] + pause["syscall_bytes"] > 0, pause

checkpoints = logged(healthy, "checkpoint")
assert len(checkpoints) == 3, ("the workload logged", checkpoints)
assert all(c["end_ns"] - c["ts_ns"] >= 3e9 for c in checkpoints), checkpoints
live, offline = findings(healthy)
for side, found in (("live", live), ("offline", offline)):
    # Slowdowns: only host noise away from the checkpoints (slowdowns_borne_out.py, below).
    assert not [f for f in found if f["kind"] not in ("pause", "slowdown")], (side, found)
    check_pauses(side, [f for f in found if f["kind"] == "pause"], checkpoints)
assert [(p["start_ns"], p["end_ns"]) for p in live] == \
    [(p["start_ns"], p["end_ns"]) for p in offline], (live, offline)
print("pauses: {} checkpoint(s) of job rank 0, {} pause(s) live, {} offline, no hang".format(
    len(checkpoints), len(live), len(offline)))

fault = logged("stop", "fault")
assert fault, "the stop run logged no fault"
fault = fault[0]
checkpoints = [c for c in logged("stop", "checkpoint") if c["ts_ns"] < fault["ts_ns"]]
assert len(checkpoints) == 2, checkpoints
live, offline = findings("stop")
for side, found in (("live", live), ("offline", offline)):
    check_pauses(side, [f for f in found if f["kind"] == "pause"], checkpoints)
    hangs = [f for f in found if f["kind"] == "hang"]
    # Slowdowns before the stop: only host noise its logs bear out (below).
    assert len(hangs) == 1, (side, found)
    hang = hangs[0]
    assert [r["job_rank"] for r in hang["lagging_ranks"]] == [fault["rank"]] == [0], hang
    assert hang["collective"] == fault["next_call"], hang
    # The limit (2 steps, 1 s at least) after rank 0's last call, and a sample interval.
    late_s = (hang["detected_ns"] - hang["lagging_ranks"][0]["last_ts_ns"]) / 1e9
    assert late_s <= 1.5, (side, late_s, hang)
    print("stop ({}): hang names job rank 0 at {} seq {}, {:.2f} s after its last call".format(
        side, hang["collective"], hang["seq"], late_s))
PY
python3 "$ROOT/tests/e2e/slowdowns_borne_out.py" "$SCRATCH/$healthy" "$SCRATCH/$healthy/events.jsonl" \
	"$SCRATCH/$healthy/check.jsonl" || fail "the healthy run: a report its logs do not bear out"
python3 "$ROOT/tests/e2e/slowdowns_borne_out.py" --hangs-judged-apart "$SCRATCH/stop" \
	"$SCRATCH/stop/events.jsonl" "$SCRATCH/stop/check.jsonl" ||
	fail "the stop run: a slowdown its logs do not bear out"
echo "PASS"
