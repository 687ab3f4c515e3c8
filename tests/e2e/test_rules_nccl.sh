#!/bin/bash
# Silent errors of the NCCL level, inferred and caught end to end: rules
# learnt from a healthy reference run (other steps than the runs checked)
# flag a gradient all-reduce whose count differs on one rank at the very
# call the workload's own log says was wrong, and nothing on a healthy run.
source "$(dirname "$0")/lib.sh"
LAYOUT=(--ranks 8 --tp 2 --pp 2)
"$TCHECK" --quiet record -o "$SCRATCH/reference.trace" -- \
	"$WORKLOAD" "${LAYOUT[@]}" --steps 12 --log-dir "$SCRATCH/reference" || fail "reference run"
"$TCHECK" --quiet infer -o "$SCRATCH/rules.json" "$SCRATCH/reference.trace" || fail "infer exited $?"
python3 - "$SCRATCH/rules.json" "$ROOT/infer/rules.h" <<'PY' || fail "the rules lack the count invariant"
import json, re, sys
rules = json.load(open(sys.argv[1]))
# The version this build writes, as its source says.
version = int(re.search(r"#define RULES_FORMAT_VERSION (\d+)", open(sys.argv[2]).read()).group(1))
assert rules["format"] == "tcheck-bpf-rules" and rules["version"] == version, rules["version"]
assert any(r["relation"] == "Consistent" and r["event"]["name"] == "ncclAllReduce"
           and r["field"] == "count" and r["failing"] == 0 for r in rules["rules"])
PY

# Fixed variant: a healthy run of another length, zero violations.
"$TCHECK" --quiet record -o "$SCRATCH/fixed.trace" -- \
	"$WORKLOAD" "${LAYOUT[@]}" --steps 20 --log-dir "$SCRATCH/fixed" || fail "fixed run"
"$TCHECK" --quiet check --rules "$SCRATCH/rules.json" --jsonl "$SCRATCH/fixed.jsonl" \
	"$SCRATCH/fixed.trace" >"$SCRATCH/fixed.txt" || fail "violations on a healthy run: $(cat "$SCRATCH/fixed.txt")"
[ ! -s "$SCRATCH/fixed.jsonl" ] || fail "JSON Lines violations on a healthy run"

# Buggy variant: rank 3 passes count+1 to one gradient all-reduce of step 7.
"$TCHECK" --quiet record -o "$SCRATCH/buggy.trace" -- \
	"$WORKLOAD" "${LAYOUT[@]}" --steps 20 --mismatch-count 3:7 --log-dir "$SCRATCH/buggy" ||
	fail "buggy run"
status=0
"$TCHECK" --quiet check --rules "$SCRATCH/rules.json" --jsonl "$SCRATCH/buggy.jsonl" \
	"$SCRATCH/buggy.trace" >"$SCRATCH/buggy.txt" || status=$?
[ "$status" = 1 ] || fail "check exited $status on the buggy run, expected 1"
grep -q "count of ncclAllReduce agrees across ranks" "$SCRATCH/buggy.txt" || fail "no text report"
python3 - "$SCRATCH/buggy.jsonl" "$SCRATCH/buggy" <<'PY' || fail "the violation is not the injected one"
import json, sys
violations = [json.loads(line) for line in open(sys.argv[1])]
log = [json.loads(line) for line in open(sys.argv[2] + "/rank-3.jsonl")]
# The workload's own truth: the all-reduce of rank 3 whose count differs, and its step.
counts = {}
for call in log:
    if call["name"] == "ncclAllReduce":
        counts.setdefault((call["step"], call["args"]["count"]), []).append(call)
odd = [c for c in log if c["name"] == "ncclAllReduce" and c["step"] == 7
       and not any(c2["args"]["count"] == c["args"]["count"]
                   for c2 in log if c2["name"] == "ncclAllReduce" and c2["step"] == 6)]
assert len(odd) == 1, odd
odd = odd[0]
assert len(violations) == 1, violations
v = violations[0]
assert v["relation"] == "Consistent" and "count" in v["invariant"], v
sides = [v["event"], v["other"]]
mine = [s for s in sides if s["pid"] == odd["pid"]]
assert len(mine) == 1 and mine[0]["fields"]["count"] == str(odd["args"]["count"]), (mine, odd)
other = [s for s in sides if s["pid"] != odd["pid"]][0]
assert other["comm"] == mine[0]["comm"] and other["seq"] == mine[0]["seq"]
assert other["fields"]["count"] == str(odd["args"]["count"] - 1)
PY

# Live: the same rules while recording, the violation printed as it happens and written to
# the events stream, as checking the run's trace afterwards reports it.
"$TCHECK" --quiet record -o "$SCRATCH/live.trace" --rules "$SCRATCH/rules.json" \
	--events "$SCRATCH/live-events.jsonl" -- \
	"$WORKLOAD" "${LAYOUT[@]}" --steps 20 --mismatch-count 3:7 --log-dir "$SCRATCH/live" \
	>"$SCRATCH/live.txt" || fail "live run"
[ "$(grep -c '^violation' "$SCRATCH/live.txt")" = 1 ] || fail "live: $(cat "$SCRATCH/live.txt")"
grep -q "count of ncclAllReduce agrees across ranks" "$SCRATCH/live.txt" || fail "live: wrong rule"
status=0
"$TCHECK" --quiet check --rules "$SCRATCH/rules.json" --jsonl "$SCRATCH/live-offline.jsonl" \
	"$SCRATCH/live.trace" >/dev/null || status=$?
[ "$status" = 1 ] || fail "offline check of the live run exited $status"
same_violations "$SCRATCH/live-events.jsonl" "$SCRATCH/live-offline.jsonl" 1 ||
	fail "live and offline checking of one run differ"
# The violation's process is rank 3 of the job, as the workload's log names it.
python3 - "$SCRATCH/live-events.jsonl" "$SCRATCH/live" <<'PY' || fail "the live violation's job rank"
import glob, json, sys
v = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["kind"] == "violation"][0]
ranks = {json.loads(open(p).readline())["pid"]: int(p.rsplit("-", 1)[1].split(".")[0])
         for p in glob.glob(sys.argv[2] + "/rank-*.jsonl")}
assert v["job_rank"] == ranks[v["pid"]], (v["job_rank"], ranks, v["pid"])
assert {v["pid"], v["other"]["pid"]} & {p for p, r in ranks.items() if r == 3}, (v, ranks)
# Each side names its process by job rank; its rank in the communicator is labelled so.
for side in (v["event"], v["other"]):
    assert side["job_rank"] == ranks[side["pid"]] and "rank" not in side, side
    assert isinstance(side["comm_rank"], int) and 0 <= side["comm_rank"] < 8, side
    # NCCL-only events have no step number: null, never -1.
    assert side["step"] == v["step"] and (v["step"] is None or v["step"] >= 0), (side, v)
PY
"$TCHECK" --quiet record -o "$SCRATCH/live-fixed.trace" --rules "$SCRATCH/rules.json" -- \
	"$WORKLOAD" "${LAYOUT[@]}" --steps 20 --log-dir "$SCRATCH/live-fixed" \
	>"$SCRATCH/live-fixed.txt" || fail "live fixed run"
! grep -q '^violation' "$SCRATCH/live-fixed.txt" || fail "live violation on a healthy run"

# Bad rules files: a clear sentence and exit status 2.
echo '{"format": "tcheck-bpf-rules", "version": 99, "rules": []}' >"$SCRATCH/future.json"
status=0
"$TCHECK" check --rules "$SCRATCH/future.json" "$SCRATCH/fixed.trace" 2>"$SCRATCH/err" || status=$?
[ "$status" = 2 ] && grep -q "version 99" "$SCRATCH/err" || fail "unknown version: $status $(cat "$SCRATCH/err")"
echo '{"rules": [' >"$SCRATCH/corrupt.json"
status=0
"$TCHECK" check --rules "$SCRATCH/corrupt.json" "$SCRATCH/fixed.trace" 2>"$SCRATCH/err" || status=$?
[ "$status" = 2 ] && grep -q "corrupt.json is not valid JSON: .*line [0-9]" "$SCRATCH/err" || fail "corrupt rules: $status"
status=0
"$TCHECK" record -o "$SCRATCH/x.trace" --rules "$SCRATCH/corrupt.json" -- true 2>"$SCRATCH/err" || status=$?
[ "$status" = 2 ] && grep -q "corrupt.json is not valid JSON" "$SCRATCH/err" || fail "record --rules: $status"
status=0
"$TCHECK" check --rules "$SCRATCH/absent.json" "$SCRATCH/fixed.trace" 2>"$SCRATCH/err" || status=$?
[ "$status" = 2 ] && grep -q "cannot read the rules file .*absent.json: .*No such file" "$SCRATCH/err" ||
	fail "absent rules: $status $(cat "$SCRATCH/err")"
# Random bytes after a fixed first one: a file whose first byte (after white space) is '{'
# is read as TrainCheck's JSON Lines and refused as such, with another sentence.
{ printf 'x'; head -c 99 /dev/urandom; } >"$SCRATCH/junk.trace"
status=0
"$TCHECK" check --rules "$SCRATCH/rules.json" "$SCRATCH/junk.trace" 2>"$SCRATCH/err" || status=$?
[ "$status" = 2 ] && grep -q "is neither a tcheck-bpf trace" "$SCRATCH/err" || fail "junk trace: $status"
status=0
"$TCHECK" infer -o "$SCRATCH/none.json" "$SCRATCH/junk.trace" 2>"$SCRATCH/err" || status=$?
[ "$status" = 2 ] && [ ! -e "$SCRATCH/none.json" ] || fail "infer on a junk trace: $status"
echo "rules inferred from a healthy run catch the count mismatch at its call, none on a healthy run"
