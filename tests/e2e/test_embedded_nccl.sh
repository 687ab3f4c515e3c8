#!/bin/bash
# NCCL linked into a library of another name (as in conda's libtorch_cuda.so)
# is found by its symbols, not its file name, and traced exactly.
source "$(dirname "$0")/lib.sh"
"$TCHECK" --quiet record -o "$SCRATCH/embedded.trace" -- "$TEST_BIN/nccl-workload-embedded" \
	--ranks 2 --steps 20 --log-dir "$SCRATCH/log" || fail "record failed"
"$TCHECK" dump "$SCRATCH/embedded.trace" >"$SCRATCH/embedded.jsonl"
grep -q '"kind":"library".*libtorch_cuda_double.so' "$SCRATCH/embedded.jsonl" ||
	fail "the embedding library was not probed"
python3 "$ROOT/tests/e2e/compare_ground_truth.py" "$SCRATCH/embedded.jsonl" "$SCRATCH/log" \
	--expect-ranks 2 || fail "the trace differs from the workload's log"
