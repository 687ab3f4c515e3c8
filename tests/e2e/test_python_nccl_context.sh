#!/bin/bash
# Every NCCL call names the Python functions that made it (py_stack), on
# every CPython installed here (3.10-3.13): calls from functions, methods and
# nested classes at several depths, from a second Python thread, and from a
# thread that runs no Python (the main thread's frames, marked). Checked
# against the workload's own log of its frames, recorded from the start and
# attached mid-run.
source "$(dirname "$0")/lib.sh"
WORKLOAD_PY="$ROOT/tests/workloads/python/nccl_context.py"
LIBRARY="$TEST_BIN/lib/libnccl.so.2"
checked=0
for python in /usr/bin/python3.11 /root/.pyenv/versions/3.1[0-3]*/bin/python3; do
	[ -x "$python" ] || continue
	name=$(echo "$python" | tr / _)
	"$TCHECK" --quiet record -o "$SCRATCH/$name.trace" --python --nccl-lib "$LIBRARY" -- \
		"$python" "$WORKLOAD_PY" --library "$LIBRARY" --log "$SCRATCH/$name.log" >/dev/null ||
		fail "record of $python failed"
	"$TCHECK" dump "$SCRATCH/$name.trace" --calls-only >"$SCRATCH/$name.jsonl"
	python3 "$ROOT/tests/e2e/compare_python_context.py" "$SCRATCH/$name.jsonl" \
		"$SCRATCH/$name.log" || fail "the Python callers of NCCL calls differ on $python"
	checked=$((checked + 1))
done
[ "$checked" -gt 0 ] || skip "no CPython 3.10-3.13 installed"

# Mid-run: the process has made calls before the recorder starts.
python=$(ls /root/.pyenv/versions/3.1[23]*/bin/python3 /usr/bin/python3.11 2>/dev/null | head -n 1)
"$python" "$WORKLOAD_PY" --library "$LIBRARY" --log "$SCRATCH/mid.log" \
	--ready "$SCRATCH/ready" --attach-wait "$SCRATCH/stop" &
workload=$!
BACKGROUND_PIDS+=("$workload")
wait_for_file "$SCRATCH/ready" 20
"$TCHECK" record -o "$SCRATCH/mid.trace" --python --pid "$workload" 2>"$SCRATCH/mid.err" &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
# Let the probes attach ("tracing N processes" says they are) and some
# rounds pass under them (the log grows by 20 calls), then end the run.
wait_for_lines "$SCRATCH/mid.err" 1 "^tcheck-bpf: tracing " 60
logged=$(wc -l <"$SCRATCH/mid.log")
wait_for_lines "$SCRATCH/mid.log" $((logged + 20)) . 60
touch "$SCRATCH/stop"
wait "$workload" || fail "the workload failed while traced"
wait "$recorder" || fail "record --pid exited with an error: $(cat "$SCRATCH/mid.err")"
"$TCHECK" dump "$SCRATCH/mid.trace" --calls-only >"$SCRATCH/mid.jsonl"
python3 "$ROOT/tests/e2e/compare_python_context.py" "$SCRATCH/mid.jsonl" "$SCRATCH/mid.log" \
	--attached || fail "the Python callers of NCCL calls after attach differ from the log"
