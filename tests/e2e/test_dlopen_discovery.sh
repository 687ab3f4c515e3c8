#!/bin/bash
# A library loaded with dlopen() after the command started (as PyTorch loads
# NCCL at import) is found when the dynamic loader announces it, without
# --nccl-lib, and every call made after the framework's set-up is recorded.
source "$(dirname "$0")/lib.sh"
"$TCHECK" --quiet record -o "$SCRATCH/late.trace" -- "$TEST_BIN/nccl-dlopen" --delay-ms 300 \
	--settle-ms 200 --calls 50 --log "$SCRATCH/late.log" || fail "record failed"
"$TCHECK" dump "$SCRATCH/late.trace" >"$SCRATCH/late.jsonl"
python3 - "$SCRATCH/late.jsonl" "$SCRATCH/late.log" <<'PY' || fail "calls after dlopen were not all recorded"
import json, sys
trace = [json.loads(l) for l in open(sys.argv[1])]
calls = [r for r in trace if r.get("kind") == "nccl" and r["depth"] == 0]
log = [json.loads(l) for l in open(sys.argv[2])]
log = [c for c in log if not (c["name"] == "ncclCommGetAsyncError" and c.get("async_error") == 0)]
assert [c["name"] for c in calls] == [c["name"] for c in log], (len(calls), len(log))
for want, got in zip(log, calls):
    for key, value in want["args"].items():
        if key in ("comm_hash", "uniqueId", "comm_out", "commId"):
            continue
        have = got["args"][key]
        # A stream passed on the stack (seventh argument or later) is left unread:
        # null and flagged (128), never a wrong value.
        if key == "stream" and have is None and list(want["args"]).index(key) >= 6:
            assert got["flags"] & 128, got
            continue
        if key == "datatype":
            have = ["ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
                    "ncclFloat16", "ncclFloat32"].index(have)
        if key == "op":
            have = ["ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"].index(have)
        assert have == value, (key, want, got)
# Found in the process (pid set) after it loaded it, not named up front.
libraries = [r for r in trace if r.get("kind") == "library" and ".output/tests/lib" in r["path"]]
assert len(libraries) == 1 and libraries[0]["pid"] != 0, libraries
print(f"{len(calls)} calls recorded from a library loaded {libraries[0]['path']}")
PY
