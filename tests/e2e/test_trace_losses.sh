#!/bin/bash
# A recording that loses calls (a 4 KB ring buffer under a job that never
# sleeps) keeps its loss counters in the trace, and every reader of the
# trace says so: check, check --rules and infer warn with the count the
# recorder gave, dump carries it, and the workload's own log confirms that
# at least that many calls are missing. A recording without losses warns of
# nothing.
source "$(dirname "$0")/lib.sh"

"$TCHECK" record --no-diagnosis --ring-buffer-mb 0.001 -o "$SCRATCH/lossy.trace" -- \
	"$WORKLOAD" --ranks 4 --steps 2000 --compute-us 0 --log-dir "$SCRATCH/lossy" \
	>/dev/null 2>"$SCRATCH/record.err" || fail "record exited $?: $(cat "$SCRATCH/record.err")"
lost=$(sed -n 's/.*warning: \([0-9]*\) calls were lost.*/\1/p' "$SCRATCH/record.err")
[ -n "$lost" ] && [ "$lost" -gt 0 ] ||
	fail "the recorder lost nothing through a 4 KB ring buffer: $(cat "$SCRATCH/record.err")"

# The workload's log: at least $lost of its calls are not in the trace.
"$TCHECK" dump "$SCRATCH/lossy.trace" >"$SCRATCH/lossy.jsonl" || fail "dump failed"
python3 - "$SCRATCH/lossy.jsonl" "$SCRATCH/lossy" "$lost" <<'PYTHON' || fail "the trace's loss counters disagree with the workload's log"
import glob, json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
lost = int(sys.argv[3])
traced = sum(1 for r in records if r.get("kind") == "nccl")
logged = sum(1 for path in glob.glob(sys.argv[2] + "/rank-*.jsonl") for _ in open(path))
stats = [r for r in records if r.get("kind") == "stats"]
print(f"logged {logged}, traced {traced}, lost {lost}")
assert stats, "no stats record in the trace"
assert stats[-1]["ringbuf_drops"] + stats[-1]["nesting_overflows"] == lost, stats[-1]
assert logged - traced >= lost, "the trace holds more calls than the log allows"
PYTHON

expected="lossy.trace: its recording lost $lost calls"
status=0
"$TCHECK" check "$SCRATCH/lossy.trace" >/dev/null 2>"$SCRATCH/check.err" || status=$?
[ $status -le 1 ] || fail "check exited $status: $(cat "$SCRATCH/check.err")"
grep -q "$expected" "$SCRATCH/check.err" || fail "check did not warn of the losses: $(cat "$SCRATCH/check.err")"
status=0
"$TCHECK" check --rules "$ROOT/rules/nccl-parallel.json" "$SCRATCH/lossy.trace" \
	>/dev/null 2>"$SCRATCH/rules.err" || status=$?
[ $status -le 1 ] || fail "check --rules exited $status: $(cat "$SCRATCH/rules.err")"
grep -q "$expected" "$SCRATCH/rules.err" || fail "check --rules did not warn of the losses: $(cat "$SCRATCH/rules.err")"
"$TCHECK" infer -o "$SCRATCH/lossy.json" "$SCRATCH/lossy.trace" 2>"$SCRATCH/infer.err" ||
	fail "infer exited $?: $(cat "$SCRATCH/infer.err")"
grep -q "$expected" "$SCRATCH/infer.err" || fail "infer did not warn of the losses: $(cat "$SCRATCH/infer.err")"

# Nothing lost, nothing said.
"$TCHECK" --quiet record --no-diagnosis -o "$SCRATCH/clean.trace" -- \
	"$WORKLOAD" --ranks 2 --steps 20 --log-dir "$SCRATCH/clean" 2>"$SCRATCH/clean-record.err" ||
	fail "record of the clean run exited $?"
grep -q "were lost" "$SCRATCH/clean-record.err" && skip "the short run lost calls; no loss-free trace to check"
status=0
"$TCHECK" check "$SCRATCH/clean.trace" >/dev/null 2>"$SCRATCH/clean.err" || status=$?
[ $status -le 1 ] || fail "check of the clean run exited $status: $(cat "$SCRATCH/clean.err")"
if grep -q "recording lost" "$SCRATCH/clean.err"; then
	fail "check warned of losses in a loss-free trace: $(cat "$SCRATCH/clean.err")"
fi
