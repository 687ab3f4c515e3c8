#!/bin/bash
# The real NCCL library (when installed): calls that fail without a GPU
# still have their arguments and return codes captured, eight-argument calls
# read their stack arguments (a stream alone there is left unread: null), and
# each call is counted once although ncclX and pncclX name the same address.
source "$(dirname "$0")/lib.sh"
[ -r "$REAL_NCCL" ] || skip "no real NCCL at $REAL_NCCL"
"$TCHECK" --quiet record -o "$SCRATCH/real.trace" --nccl-lib "$REAL_NCCL" -- \
	"$TEST_BIN/nccl-real-probe" "$REAL_NCCL" "$SCRATCH/real.log" 25 || fail "record failed"
"$TCHECK" dump "$SCRATCH/real.trace" >"$SCRATCH/real.jsonl"
python3 - "$SCRATCH/real.jsonl" "$SCRATCH/real.log" <<'PY' || fail "real NCCL trace differs"
import json, sys
names = ["ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
         "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16"]
ops = ["ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"]
trace = [json.loads(l) for l in open(sys.argv[1])]
calls = [r for r in trace if r.get("kind") == "nccl" and r["depth"] == 0]
log = [json.loads(l) for l in open(sys.argv[2])]
assert len(calls) == len(log), f"{len(log)} calls made, {len(calls)} traced"
for want, got in zip(log, calls):
    assert want["name"] == got["name"], (want, got)
    assert want["ret"] == got["ret"], (want, got)
    for key, value in want.items():
        if key in ("name", "ret", "tid", "uniqueId", "commId"):
            continue
        have = got["args"][key]
        # ncclAllReduce's stream, its seventh argument, is alone on the stack: not read.
        if key == "stream" and want["name"] == "ncclAllReduce" and have is None:
            continue
        if key == "datatype":
            have = names.index(have)
        if key == "op":
            have = ops.index(have)
        assert have == value, (key, want, got)
    if want["name"] == "ncclGetUniqueId":
        assert int(got["unique_id_hash"], 16) == want["uniqueId"], got
    if want["name"] == "ncclCommInitRank":
        assert int(got["args"]["commId"], 16) == want["commId"], got
libraries = [r for r in trace if r.get("kind") == "library"]
assert libraries and libraries[0]["functions_attached"] >= 20, libraries
print(f"{len(calls)} calls match; {libraries[0]['functions_attached']} functions probed")
PY
