#!/bin/bash
# Records nccl-api-tour, whose 2 ranks call every NCCL function the tracer
# probes (failing calls included), and checks the trace against the tour's
# log: every call and argument, every probed function present, none doubled.
# One rank also makes a split the library refuses (its peers never see it):
# identities of later splits must still agree across ranks.
source "$(dirname "$0")/lib.sh"
TOUR="$TEST_BIN/nccl-api-tour"
[ -x "$TOUR" ] || fail "$TOUR is missing: run make"

"$TCHECK" --quiet record -o "$SCRATCH/tour.trace" -- \
	"$TOUR" --log-dir "$SCRATCH/log" --lone-refused-split || fail "record exited $?"
"$TCHECK" dump "$SCRATCH/tour.trace" >"$SCRATCH/tour.jsonl" || fail "dump failed"
python3 "$ROOT/tests/e2e/compare_ground_truth.py" "$SCRATCH/tour.jsonl" "$SCRATCH/log" \
	--expect-ranks 2 || fail "the trace differs from the tour's log"

# Every communicator created was identified at once, even the children of
# splits and those of ncclCommInitAll, however soon the process ended.
python3 - "$SCRATCH/tour.jsonl" <<'PY' || fail "a communicator was left without identity"
import json, sys
comms = [json.loads(l) for l in open(sys.argv[1]) if '"kind":"communicator"' in l]
bad = [c for c in comms if c["origin"] == "unknown" or c["rank"] is None or c["nranks"] is None]
assert not bad, bad
print(f"{len(comms)} communicators, all with identity, rank and size")
PY

python3 - "$ROOT/user/model/nccl_api.c" "$SCRATCH/tour.jsonl" "$SCRATCH/log" <<'EOF' ||
import collections
import glob
import json
import os
import re
import sys

table_path, trace_path, log_dir = sys.argv[1:]
RESULTS = ["ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
           "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"]
DATATYPES = ["ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
             "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
             "ncclFloat8e5m2"]
OPS = ["ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"]

with open(table_path) as handle:
    # clang-format puts a function's name and its kind on lines of their own.
    probed = re.findall(r'"(nccl[A-Za-z]+)",\s*NCCL_KIND_', handle.read())
with open(trace_path) as handle:
    trace = [json.loads(line) for line in handle if line.strip()]
logs = {}
for path in glob.glob(os.path.join(log_dir, "rank-*.jsonl")):
    with open(path) as handle:
        calls = [json.loads(line) for line in handle if line.strip()]
    logs[calls[0]["pid"]] = calls
calls = [r for r in trace if r.get("kind") == "nccl"]
problems = []
if len(probed) != 27:
    problems.append(f"{len(probed)} functions found in {table_path}, expected 27")

for pid, logged in sorted(logs.items()):
    mine = sorted((c for c in calls if c["pid"] == pid and c["depth"] == 0),
                  key=lambda c: c["ts_ns"])
    missing = sorted(set(probed) - {c["name"] for c in mine})
    if missing:
        problems.append(f"pid {pid}: never in the trace: {', '.join(missing)}")
    # Only the calls that failed or reported an error, with the value read back.
    kept = [c for c in logged
            if c["name"] == "ncclCommGetAsyncError" and not c.get("tracer_filtered")]
    traced = [c for c in mine if c["name"] == "ncclCommGetAsyncError"]
    if len(kept) != len(traced):
        problems.append(f"pid {pid}: {len(kept)} ncclCommGetAsyncError calls to keep, "
                        f"{len(traced)} in the trace")
    for expected, got in zip(kept, traced):
        value = expected.get("async_error")
        want = None if value is None else RESULTS[value]
        if got["ret"] != expected["ret"] or got["args"]["asyncError"] != want:
            problems.append(f"pid {pid}: ncclCommGetAsyncError ret {got['ret']} asyncError "
                            f"{got['args']['asyncError']}, expected ret {expected['ret']} "
                            f"asyncError {want}")
    for got in (c for c in mine if c["name"] == "ncclGetUniqueId" and c["ret"] != 0):
        if got["unique_id_hash"] is not None or got["args"]["uniqueId"] != 0:
            problems.append(f"pid {pid}: ncclGetUniqueId(NULL) has an id in the trace")
    reduced = [c["args"] for c in mine if c["name"] == "ncclAllReduce" and c["ret"] == 0]
    for names, key in ((DATATYPES, "datatype"), (OPS, "op")):
        absent = set(names) - {args[key] for args in reduced}
        if absent:
            problems.append(f"pid {pid}: no ncclAllReduce with {key} {', '.join(sorted(absent))}")

# ncclX is a weak alias of pncclX: one probe per address, so one record per call.
seen = collections.Counter((c["pid"], c["tid"], c["ts_ns"]) for c in calls)
doubled = [key for key, count in seen.items() if count > 1]
if doubled:
    problems.append(f"{len(doubled)} calls recorded more than once, e.g. {doubled[0]}")
filtered = sum(c.get("tracer_filtered", 0) for logged in logs.values() for c in logged)
stats = [r for r in trace if r.get("kind") == "stats"]
if stats and stats[-1]["filtered"] != filtered:
    problems.append(f"the tracer filtered {stats[-1]['filtered']} ncclCommGetAsyncError calls, "
                    f"the tour made {filtered} that report no error")

print(f"{len(probed)} probed functions, {len(calls)} calls in the trace, "
      f"{filtered} ncclCommGetAsyncError calls filtered")
for problem in problems:
    print("  " + problem)
sys.exit(1 if problems else 0)
EOF
	fail "the trace misses a probed function or records a call twice"
