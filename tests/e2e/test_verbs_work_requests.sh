#!/bin/bash
# Work requests through the verbs path: the test double's provider functions,
# reached only through the device context's ops table, are found when the
# device is opened and probed; the trace's counts (posted, signalled,
# completions, errors, bytes) equal the workload's own log, in `record` and
# in `attach` (whose live line shows them). A process that already maps
# libibverbs at attach and holds no device is told (with -v) that devices it
# opens from then on are tracked.
source "$(dirname "$0")/lib.sh"
VERBS_WORKLOAD="$TEST_BIN/verbs/verbs-workload"

# Waits up to $3 seconds for the text $2 in the file $1.
wait_for_text() {
	local deadline=$((SECONDS + $3))
	until grep -q "$2" "$1" 2>/dev/null; do
		[ $SECONDS -lt $deadline ] || fail "timed out waiting for '$2' in $1: $(cat "$1")"
		sleep 0.05
	done
}

# Compares the last network sample of the trace $1 with the workload log $2.
compare_counts() {
	"$TCHECK" dump "$1" >"$1.jsonl" || fail "dump of $1 failed"
	python3 - "$1.jsonl" "$2" <<'PY' || fail "the trace's work requests differ from the workload's log"
import json, sys
log = dict(line.strip().split("=") for line in open(sys.argv[2]) if "=" in line)
pid = int(log.pop("pid"))
samples = [r for r in map(json.loads, open(sys.argv[1]))
           if r.get("kind") == "network" and r["pid"] == pid]
assert samples, "no network samples for the workload"
for earlier, later in zip(samples, samples[1:]):
    for key in log:
        assert later[key] >= earlier[key], (key, earlier, later)
last = samples[-1]
assert last["source"] == "verbs", last
for key, value in log.items():
    assert last[key] == int(value), f"{key}: the workload says {value}, the trace {last[key]}"
assert last["last_post_ns"] > 0 and last["last_completion_ns"] >= last["last_post_ns"], last
print(f"{len(samples)} samples; final counts equal the workload's: {log}")
PY
}

# record: the device is opened after the probes are in place.
mkfifo "$SCRATCH/gate"
"$TCHECK" -v record -o "$SCRATCH/record.trace" -- "$VERBS_WORKLOAD" --iterations 300 --chain 8 \
	--bytes 1500 --errors 5 --gate "$SCRATCH/gate" --log "$SCRATCH/record.log" \
	2>"$SCRATCH/record.err" &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
wait_for_text "$SCRATCH/record.err" "opened a verbs device" 20
echo go >"$SCRATCH/gate"
wait "$recorder" || fail "record failed: $(cat "$SCRATCH/record.err")"
compare_counts "$SCRATCH/record.trace" "$SCRATCH/record.log"

# attach: libibverbs is already mapped; the device is opened after attach.
mkfifo "$SCRATCH/open-gate" "$SCRATCH/post-gate"
"$VERBS_WORKLOAD" --iterations 400 --chain 4 --bytes 700 --pause-us 5000 \
	--open-gate "$SCRATCH/open-gate" --gate "$SCRATCH/post-gate" --log "$SCRATCH/attach.log" &
workload=$!
BACKGROUND_PIDS+=("$workload")
"$TCHECK" -v attach --pid "$workload" -o "$SCRATCH/attach.trace" >"$SCRATCH/live.out" \
	2>"$SCRATCH/attach.err" &
attach=$!
BACKGROUND_PIDS+=("$attach")
wait_for_text "$SCRATCH/attach.err" "tracing 1 process" 20
grep -q "process $workload maps .*libibverbs.so.1 and holds no verbs device yet: devices it opens from now on are tracked" \
	"$SCRATCH/attach.err" || fail "attach -v should say which verbs devices it tracks"
echo go >"$SCRATCH/open-gate"
wait_for_text "$SCRATCH/attach.err" "opened a verbs device" 20
echo go >"$SCRATCH/post-gate"
wait "$workload" || fail "the workload failed"
wait "$attach" || fail "attach failed: $(cat "$SCRATCH/attach.err")"
compare_counts "$SCRATCH/attach.trace" "$SCRATCH/attach.log"
grep -q "pid $workload work requests: in flight [0-9]* ([0-9]* bytes), completed [1-9]" \
	"$SCRATCH/live.out" || fail "the live line should show work requests: $(cat "$SCRATCH/live.out")"
