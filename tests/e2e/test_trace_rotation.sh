#!/bin/bash
# record --max-size cuts a recording into pieces, each a whole trace, and
# --max-files keeps the newest of them. Held against the workload's own log:
# - every piece kept: the pieces together hold every call the workload
#   logged, once, in order (compare_ground_truth.py), whatever order the
#   shell lists them in; each piece reads alone, closed, within its size;
# - three pieces kept of a run that crashes: the calls they hold are the
#   end of each rank's log with no gap, the recorder said how many records
#   it removed, and check finds the crash of the rank whose fault file says
#   it crashed, from the three pieces and from the newest piece alone;
# - what makes no sense is refused, and a piece of an earlier recording is
#   never overwritten.
source "$(dirname "$0")/lib.sh"

MAX=16384

# Every piece kept.
mkdir -p "$SCRATCH/all"
"$TCHECK" record --no-diagnosis --max-size 16K -o "$SCRATCH/all/run.trace" -- \
	"$WORKLOAD" --ranks 2 --steps 400 --compute-us 0 --log-dir "$SCRATCH/all/log" \
	>/dev/null 2>"$SCRATCH/record.err" || fail "record exited $?: $(cat "$SCRATCH/record.err")"
grep -q "were lost" "$SCRATCH/record.err" && skip "the recording lost calls on this loaded machine"
pieces=$(ls "$SCRATCH/all" | grep -c '^run\.trace')
[ "$pieces" -ge 4 ] || fail "a 16 KiB limit cut the run into $pieces pieces: $(ls -l "$SCRATCH/all")"
grep -q "the trace is in $pieces pieces" "$SCRATCH/record.err" ||
	fail "the recorder did not name the $pieces pieces: $(cat "$SCRATCH/record.err")"
for piece in "$SCRATCH"/all/run.trace*; do
	size=$(stat -c %s "$piece")
	# A piece ends at the chunk that reaches the limit: chunks are an eighth of it.
	[ "$size" -le $((MAX + MAX / 4)) ] || fail "$piece holds $size bytes, over --max-size 16K"
	"$TCHECK" dump "$piece" >"$SCRATCH/piece.jsonl" 2>"$SCRATCH/piece.err" || fail "dump $piece exited $?"
	[ -s "$SCRATCH/piece.err" ] && fail "dump $piece warned: $(cat "$SCRATCH/piece.err")"
	head -1 "$SCRATCH/piece.jsonl" | grep -q '"kind": *"header"' || fail "$piece does not begin with a header"
done
# The shell lists run.trace.1, run.trace.10, run.trace.2: dump orders them itself.
"$TCHECK" dump "$SCRATCH"/all/run.trace* >"$SCRATCH/all.jsonl" || fail "dump of the pieces exited $?"
python3 "$ROOT/tests/e2e/compare_ground_truth.py" "$SCRATCH/all.jsonl" "$SCRATCH/all/log" \
	--expect-ranks 2 || fail "the pieces together do not hold the workload's calls"
status=0
"$TCHECK" check "$SCRATCH"/all/run.trace* >"$SCRATCH/check.out" 2>&1 || status=$?
[ $status -eq 0 ] || fail "check of the healthy run's pieces exited $status: $(cat "$SCRATCH/check.out")"
grep -q "in $pieces trace(s)" "$SCRATCH/check.out" || fail "check did not read the $pieces pieces"

# Three pieces kept of a run whose rank 1 crashes at step 300.
mkdir -p "$SCRATCH/kept"
status=0
"$TCHECK" record --max-size 16K --max-files 3 -o "$SCRATCH/kept/run.trace" -- \
	"$WORKLOAD" --ranks 2 --steps 400 --compute-us 0 --crash 1:300 --log-dir "$SCRATCH/kept/log" \
	>/dev/null 2>"$SCRATCH/kept/record.err" || status=$?
[ $status -ne 0 ] || fail "the crashing workload exited 0"
grep -q "were lost" "$SCRATCH/kept/record.err" && skip "the recording lost calls on this loaded machine"
[ "$(ls "$SCRATCH/kept" | grep -c '^run\.trace')" -eq 3 ] ||
	fail "--max-files 3 left: $(ls "$SCRATCH/kept")"
removed=$(sed -n 's/.*the \([0-9]*\) oldest pieces were removed.*with the \([0-9]*\) records.*/\2/p' \
	"$SCRATCH/kept/record.err")
[ -n "$removed" ] && [ "$removed" -gt 0 ] ||
	fail "the recorder did not say what rotation removed: $(cat "$SCRATCH/kept/record.err")"
"$TCHECK" dump "$SCRATCH"/kept/run.trace* >"$SCRATCH/kept/all.jsonl" || fail "dump of the kept pieces"
"$TCHECK" check --json "$SCRATCH"/kept/run.trace* >"$SCRATCH/kept/check.jsonl" 2>/dev/null || true
"$TCHECK" check --json "$SCRATCH/kept/run.trace" >"$SCRATCH/kept/newest.jsonl" 2>/dev/null || true
python3 - "$SCRATCH/kept" "$removed" <<'PYTHON' || fail "the kept pieces disagree with the workload's log"
import datetime, glob, json, os, sys
folder, removed = sys.argv[1], int(sys.argv[2])
records = [json.loads(line) for line in open(os.path.join(folder, "all.jsonl"))]
calls = [r for r in records if r["kind"] == "nccl" and r["depth"] == 0]
logged = {}
for path in glob.glob(os.path.join(folder, "log", "rank-*.jsonl")):
    entries = [json.loads(line) for line in open(path)]
    # Polled constantly: the tracer keeps only the failed polls.
    entries = [e for e in entries if e.get("name", "").startswith("nccl") and not (
        e["name"] == "ncclCommGetAsyncError" and e["ret"] == 0 and not e.get("async_error"))]
    if entries:
        logged[entries[0]["pid"]] = [e["name"] for e in entries]
kept_total = 0
for pid, names in logged.items():
    kept = [c["name"] for c in calls if c["pid"] == pid]
    assert kept, f"no call of pid {pid} kept"
    # The end of the log, with no gap: rotation drops whole pieces from the front only.
    assert kept == names[-len(kept):], (pid, len(kept), len(names))
    assert len(kept) < len(names), f"pid {pid}: nothing was dropped"
    kept_total += len(kept)
print(f"kept the last {kept_total} calls of {sum(map(len, logged.values()))}; "
      f"the recorder removed {removed} records")
rank1 = next(pid for pid, names in logged.items()
             if json.loads(open(os.path.join(folder, "log", "rank-1.jsonl")).readline())["pid"] == pid)
year = str(datetime.datetime.now(datetime.timezone.utc).year)
for name in ("check.jsonl", "newest.jsonl"):
    findings = [json.loads(line) for line in open(os.path.join(folder, name))]
    # Ranks lined up by seq, not by their first call in a piece: no false mismatch.
    mismatches = [f for f in findings if f["kind"] == "mismatch"]
    assert not mismatches, (name, len(mismatches), mismatches[0])
    crashes = [f for f in findings if f["kind"] == "crash" and f["signal"] == "SIGSEGV"]
    assert len(crashes) == 1, (name, [f["kind"] for f in findings])
    crash = crashes[0]
    assert crash["job_rank"] == 1 and crash["pid"] == rank1, (name, crash["job_rank"], crash["pid"])
    last = [c["function"] for c in crash["last_calls"]]
    assert last and last == logged[rank1][-len(last):], (name, last, logged[rank1][-len(last):])
    assert crash["wall_clock"].startswith(year), (name, crash["wall_clock"])
    print(f"{name}: rank 1 (pid {rank1}) SIGSEGV, its last {len(last)} calls as logged")
PYTHON

# Refused: what makes no sense, and a piece of an earlier recording.
refused() {
	local expected=$1
	shift
	status=0
	"$TCHECK" record "$@" -- /bin/true >/dev/null 2>"$SCRATCH/refused.err" || status=$?
	[ $status -eq 2 ] || fail "record $* exited $status, not 2"
	grep -q -- "$expected" "$SCRATCH/refused.err" || fail "record $*: $(cat "$SCRATCH/refused.err")"
}
refused "needs a size in bytes" -o "$SCRATCH/x.trace" --max-size 16X
refused "needs a size in bytes" -o "$SCRATCH/x.trace" --max-size 1K
refused "needs a size in bytes" -o "$SCRATCH/x.trace" --max-size 1.5
refused "give --max-size too" -o "$SCRATCH/x.trace" --max-files 3
refused "--max-files needs" -o "$SCRATCH/x.trace" --max-size 16K --max-files 1
refused "is standard output" -o - --max-size 16K
mkdir -p "$SCRATCH/stale"
echo "an earlier piece" >"$SCRATCH/stale/run.trace.3"
status=0
"$TCHECK" record --force --max-size 16K -o "$SCRATCH/stale/run.trace" -- /bin/true \
	>/dev/null 2>"$SCRATCH/stale.err" || status=$?
[ $status -ne 0 ] || fail "record wrote beside a piece of an earlier recording"
grep -q "run.trace.3 is a piece of an earlier recording" "$SCRATCH/stale.err" ||
	fail "the refusal did not name the earlier piece: $(cat "$SCRATCH/stale.err")"
[ "$(cat "$SCRATCH/stale/run.trace.3")" = "an earlier piece" ] || fail "the earlier piece was changed"
echo "ok: $pieces pieces hold every call; 3 kept hold the end of the log and the crash"
