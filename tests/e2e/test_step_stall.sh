#!/bin/bash
# Hangs with no collective to wait on: a single-process training job
# (train_cpu.py, recorded with --python and the default limits) that blocks
# for good on an event before the backward pass of step 12, as its own log
# says. With no call in flight on any communicator, the step progress is the
# signal: live (--events) and offline (check), one hang with step_progress
# set, naming the process, the step it stopped at (the log's), no sooner
# than the 30 s default after its last call. The same job without the fault,
# with an evaluation every 5 steps, reports nothing.
source "$(dirname "$0")/lib.sh"
torch_stack
WORKLOAD="$ROOT/tests/workloads/python/train_cpu.py"

"$TCHECK" record --python --events "$SCRATCH/stall.jsonl" -o "$SCRATCH/stall.trace" -- \
	$TORCH_PYTHON "$WORKLOAD" --steps 40 --step-sleep-ms 20 --eval-every 5 --stall-at-step 12 \
	--log "$SCRATCH/stall-log.jsonl" >"$SCRATCH/stall.out" 2>&1 &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
for _ in $(seq 900); do
	grep -q '"step_progress":true' "$SCRATCH/stall.jsonl" 2>/dev/null && break
	kill -0 "$recorder" 2>/dev/null || break
	sleep 0.1
done
pid=$(python3 -c 'import json, sys
print(next(r["pid"] for r in map(json.loads, open(sys.argv[1])) if r["kind"] == "fault"))' \
	"$SCRATCH/stall-log.jsonl") || fail "the workload logged no fault: $(tail -3 "$SCRATCH/stall.out")"
kill "$pid" 2>/dev/null
wait "$recorder" || true
"$TCHECK" check --json "$SCRATCH/stall.trace" >"$SCRATCH/stall-check.jsonl" || true

"$TCHECK" record --python --events "$SCRATCH/clean.jsonl" -o "$SCRATCH/clean.trace" -- \
	$TORCH_PYTHON "$WORKLOAD" --steps 40 --step-sleep-ms 20 --eval-every 5 \
	>"$SCRATCH/clean.out" 2>&1 || fail "the fault-free run failed: $(tail -3 "$SCRATCH/clean.out")"
"$TCHECK" check --json "$SCRATCH/clean.trace" >"$SCRATCH/clean-check.jsonl" || true

python3 - "$SCRATCH" <<'PY' || fail "the reports do not match what the workload logged"
import json, os, sys
scratch = sys.argv[1]

def jsonl(name):
    path = os.path.join(scratch, name)
    return [json.loads(line) for line in open(path) if line.strip()] if os.path.exists(path) else []

log = jsonl("stall-log.jsonl")
fault = next(r for r in log if r["kind"] == "fault")
last_logged = max(r["ts_ns"] for r in log)
for name in ("stall.jsonl", "stall-check.jsonl"):
    hangs = [r for r in jsonl(name) if r["kind"] == "hang"]
    assert len(hangs) == 1, (name, hangs)
    hang = hangs[0]
    assert hang["step_progress"] and hang["class"] == "host" and hang["collective"] is None, hang
    ranks = hang["lagging_ranks"]
    assert [r["pid"] for r in ranks] == [fault["pid"]], (hang, fault)
    assert ranks[0]["last_step"] == fault["fault_step"], (hang, fault)
    # Its last call came before the fault, and the limit is the default 30 s.
    assert ranks[0]["last_ts_ns"] <= fault["ts_ns"], (hang, fault)
    assert hang["detected_ns"] - ranks[0]["last_ts_ns"] >= 30e9, hang
    assert hang["detected_ns"] - fault["ts_ns"] < 31e9, hang
    print(name, "hang at step", ranks[0]["last_step"], "after", hang["stalled_ns"] / 1e9, "s;",
          "last in Python:", ranks[0]["last_function"])
for name in ("clean.jsonl", "clean-check.jsonl"):
    findings = [r for r in jsonl(name) if r["kind"] in ("hang", "slowdown", "mismatch")]
    assert findings == [], (name, findings)
print("fault-free run: no report")
PY
echo "PASS"
