#!/bin/bash
# Records a 4-rank, 100-step job of the NCCL test double started by one
# launcher command, and checks every call against the workload's own log:
# nothing lost, nothing doubled, every argument equal, zero drops.
# e2e-alone: every call of a fast job must be recorded, with zero drops
source "$(dirname "$0")/lib.sh"
"$TCHECK" record -o "$SCRATCH/job.trace" -- \
	"$WORKLOAD" --ranks 4 --steps 100 --log-dir "$SCRATCH/log" || fail "record exited $?"
"$TCHECK" dump "$SCRATCH/job.trace" >"$SCRATCH/job.jsonl" || fail "dump failed"
python3 "$ROOT/tests/e2e/compare_ground_truth.py" "$SCRATCH/job.jsonl" "$SCRATCH/log" \
	--expect-ranks 4 || fail "the trace differs from the workload's log"
# Eight ranks, other parallel layouts: still exact.
"$TCHECK" --quiet record -o "$SCRATCH/eight.trace" -- \
	"$WORKLOAD" --ranks 8 --steps 20 --tp 4 --pp 2 --log-dir "$SCRATCH/log8" || fail "record of 8 ranks"
"$TCHECK" dump "$SCRATCH/eight.trace" >"$SCRATCH/eight.jsonl"
python3 "$ROOT/tests/e2e/compare_ground_truth.py" "$SCRATCH/eight.jsonl" "$SCRATCH/log8" \
	--expect-ranks 8 || fail "the 8-rank trace differs from the workload's log"
