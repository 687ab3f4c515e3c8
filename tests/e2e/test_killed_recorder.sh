#!/bin/bash
# A recorder killed with SIGKILL leaves a trace that reads up to its last
# complete chunk, holds exactly a prefix of each rank's calls, and is said
# to be unclosed by every verb that reads it (dump, check, diff, infer), with
# when its last record was written; their exit statuses stay the documented
# ones. A recording closed cleanly is said to be nothing of the kind.
source "$(dirname "$0")/lib.sh"
"$TCHECK" --quiet record -o "$SCRATCH/cut.trace" -- \
	"$WORKLOAD" --ranks 2 --steps 2000 --step-sleep-ms 2 --log-dir "$SCRATCH/log" &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
wait_for_file "$SCRATCH/log/rank-1.progress" 20
while [ "$(cat "$SCRATCH/log/rank-0.progress")" -lt 100 ]; do sleep 0.05; done
killed_at=$(date +%s.%N)
kill -9 "$recorder"
wait "$recorder" 2>/dev/null || true
pkill -9 -f "nccl-workload --ranks 2 --steps 2000" || true
"$TCHECK" dump "$SCRATCH/cut.trace" >"$SCRATCH/cut.jsonl" 2>"$SCRATCH/dump.err" ||
	fail "a trace cut by SIGKILL must still read: $(cat "$SCRATCH/dump.err")"
python3 - "$SCRATCH/cut.jsonl" "$SCRATCH/log" <<'PY' || fail "the cut trace is not a prefix"
import glob, json, sys
trace = [json.loads(l) for l in open(sys.argv[1])]
calls = [r for r in trace if r.get("kind") == "nccl" and r["depth"] == 0]
assert len(calls) > 500, f"only {len(calls)} calls survived"
for path in glob.glob(sys.argv[2] + "/rank-*.jsonl"):
    log = [json.loads(l) for l in open(path)]
    log = [c for c in log if not (c["name"] == "ncclCommGetAsyncError" and c.get("async_error") == 0)]
    mine = sorted((c for c in calls if c["pid"] == log[0]["pid"]), key=lambda c: c["ts_ns"])
    assert 0 < len(mine) <= len(log) + 50, (len(mine), len(log))
    for want, got in zip(log, mine):
        assert (want["name"], want["ret"]) == (got["name"], got["ret"]), (want, got)
print(f"{len(calls)} calls read back from the cut trace")
PY

# Every verb says the trace was not closed and when its last record was written.
unclosed="was not closed by its recorder"
grep -q "$unclosed" "$SCRATCH/dump.err" || fail "dump did not say the trace was not closed: $(cat "$SCRATCH/dump.err")"
grep -Eq "its last record was written at 20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z" "$SCRATCH/dump.err" ||
	fail "dump did not say when the last record was written: $(cat "$SCRATCH/dump.err")"
status=0
"$TCHECK" check "$SCRATCH/cut.trace" >"$SCRATCH/check.out" 2>"$SCRATCH/check.err" || status=$?
# 0 clean or 1 findings (the kill itself can show as a late step): never an error.
[ "$status" -le 1 ] || fail "check of the cut trace exited $status: $(cat "$SCRATCH/check.err")"
grep -q "$unclosed" "$SCRATCH/check.err" || fail "check did not say the trace was not closed"
status=0
"$TCHECK" diff "$SCRATCH/cut.trace" -- "$SCRATCH/cut.trace" >/dev/null 2>"$SCRATCH/diff.err" || status=$?
grep -q "$unclosed" "$SCRATCH/diff.err" || fail "diff did not say the trace was not closed: $(cat "$SCRATCH/diff.err")"
"$TCHECK" infer -o "$SCRATCH/rules.json" "$SCRATCH/cut.trace" >/dev/null 2>"$SCRATCH/infer.err" ||
	fail "infer of the cut trace failed: $(cat "$SCRATCH/infer.err")"
grep -q "$unclosed" "$SCRATCH/infer.err" || fail "infer did not say the trace was not closed"

# The last record's time agrees with the moment of the kill: no later, and
# within two seconds before it (the recorder writes a chunk every 0.2 s).
python3 - "$SCRATCH/dump.err" "$killed_at" <<'PY' || fail "the last record's time does not match the kill"
import datetime, re, sys
text = re.search(r"written at (\S+)Z", open(sys.argv[1]).read()).group(1)
said = datetime.datetime.fromisoformat(text).replace(tzinfo=datetime.timezone.utc).timestamp()
before = float(sys.argv[2]) - said
assert -0.01 <= before <= 2.0, f"last record {before:.3f} s before the kill"
print(f"last record written {before * 1000:.0f} ms before the kill")
PY

# A recording its recorder closed is whole: nothing of the kind is said.
rm -f "$SCRATCH/whole.trace"
"$TCHECK" --quiet record -o "$SCRATCH/whole.trace" -- "$WORKLOAD" --ranks 2 --steps 5 --log-dir "$SCRATCH/whole-log" >/dev/null
"$TCHECK" dump "$SCRATCH/whole.trace" >/dev/null 2>"$SCRATCH/whole.err" ||
	fail "dump of a whole trace failed: $(cat "$SCRATCH/whole.err")"
if grep -q "$unclosed\|before that chunk is complete" "$SCRATCH/whole.err"; then
	fail "a trace its recorder closed was called unclosed: $(cat "$SCRATCH/whole.err")"
fi
echo "unclosed trace said by dump, check, diff and infer; a closed one is not"
