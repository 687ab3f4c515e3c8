#!/bin/bash
# Healthy pauses are no hang, with the NCCL test double: a 4-rank job
# (data, tensor and pipeline parallel) whose rank 1 writes a checkpoint file
# for 2.5 s every 20 steps (--checkpoint 1:20:2500) while its peers go on to
# their next collectives, recorded with the live detectors on (--events) and
# judged again offline (check), in both of the double's modes: calls that
# enqueue and return (as NCCL's collectives do), and calls that block until
# every rank took part (NCCL_DOUBLE_BLOCKING=1, as gloo's):
# - no hang, and no slowdown of rank 1 or within a second of a checkpoint's
#   end; each checkpoint the workload logged reported as a pause of rank 1
#   doing file I/O, the same live and offline;
# - the same job whose rank 1 then waits for ever (--delay 1:50:forward:0):
#   its pauses, then one hang naming rank 1 within the usual limit.
# e2e-alone: no slowdown is allowed within a second of a checkpoint's end
source "$(dirname "$0")/lib.sh"

# run NAME [ENV=VALUE] -- workload options: records into $SCRATCH/NAME.
run() {
	local name=$1 mode=$2
	shift 2
	mkdir -p "$SCRATCH/$name/log"
	env $mode setsid "$TCHECK" record --events "$SCRATCH/$name/events.jsonl" \
		-o "$SCRATCH/$name/trace" --duration 20 -- "$WORKLOAD" --ranks 4 \
		--step-sleep-ms 60 --checkpoint 1:20:2500 --log-dir "$SCRATCH/$name/log" "$@" \
		>"$SCRATCH/$name/out" 2>&1 &
	local session=$!
	BACKGROUND_PIDS+=("$session")
	wait "$session" || fail "record of $name exited $?: $(tail -3 "$SCRATCH/$name/out")"
	kill -9 -- "-$session" 2>/dev/null || true
	"$TCHECK" check --json "$SCRATCH/$name/trace" >"$SCRATCH/$name/check.jsonl" || true
}
run async-pauses NCCL_DOUBLE_BLOCKING=0 --steps 60
run blocking-pauses NCCL_DOUBLE_BLOCKING=1 --steps 60
run async-stop NCCL_DOUBLE_BLOCKING=0 --steps 100000 --delay 1:50:forward:0
run blocking-stop NCCL_DOUBLE_BLOCKING=1 --steps 100000 --delay 1:50:forward:0

python3 - "$SCRATCH" <<'PY' || fail "the reports do not match what the workload logged"
import json, os, sys
scratch = sys.argv[1]

def jsonl(path):
    return [json.loads(line) for line in open(path) if line.strip()] if os.path.exists(path) else []

for mode in ("async", "blocking"):
    for run in ("pauses", "stop"):
        name = mode + "-" + run
        checkpoints = jsonl(os.path.join(scratch, name, "log", "rank-1.checkpoints"))
        assert len(checkpoints) == 2, (name, "the workload logged", checkpoints)
        live = jsonl(os.path.join(scratch, name, "events.jsonl"))
        offline = [r for r in jsonl(os.path.join(scratch, name, "check.jsonl")) if "kind" in r]
        for side, found in (("live", live), ("offline", offline)):
            pauses = [f for f in found if f["kind"] == "pause"]
            assert len(pauses) == len(checkpoints), (name, side, found)
            for pause, checkpoint in zip(pauses, checkpoints):
                assert pause["job_rank"] == 1 and pause["doing"] == "file_io", (name, pause)
                assert checkpoint["start_ns"] - 1e9 <= pause["start_ns"] <= checkpoint["start_ns"], \
                    (name, side, pause, checkpoint)
                assert checkpoint["end_ns"] <= pause["end_ns"] <= checkpoint["end_ns"] + 1e9, \
                    (name, side, pause, checkpoint)
            others = [f for f in found if f["kind"] != "pause"]
            # What the pauses caused: a report naming rank 1, or one within a second of a
            # checkpoint's end. Four ranks on two cores make a straggler of 30-100 ms now and
            # then elsewhere in the run (the hang tests see them too): not the pauses' doing.
            caused = [f for f in others if f["kind"] != "slowdown" or
                      1 in [s["job_rank"] for s in f["stragglers"]] or
                      any(c["start_ns"] <= f["detected_ns"] <= c["end_ns"] + 1e9
                          for c in checkpoints)]
            if run == "pauses":
                assert not caused, (name, side, caused)
                if others:
                    print("{} ({}): {} slowdown(s) away from the pauses: {}".format(
                        name, side, len(others), [(s["stragglers"][0]["job_rank"], s["lead_ns"])
                                                  for s in others]))
                continue
            fault = jsonl(os.path.join(scratch, name, "log", "rank-1.fault"))
            assert fault, (name, "the workload did not reach its fault")
            hangs = [f for f in others if f["kind"] == "hang"]
            assert hangs and not [f for f in caused if f["kind"] == "slowdown"], (name, side, others)
            hang = hangs[0]
            assert [r["job_rank"] for r in hang["lagging_ranks"]] == [1], (name, side, hang)
            late_s = (hang["detected_ns"] - hang["lagging_ranks"][0]["last_ts_ns"]) / 1e9
            assert late_s <= 1.5, (name, side, late_s, hang)
            print("{} ({}): hang names rank 1, {:.2f} s after its last call".format(name, side, late_s))
        print("{}: {} checkpoint(s) of rank 1 reported as pauses, live and offline".format(
            name, len(checkpoints)))
PY
echo "PASS"
