#!/bin/bash
# Work requests through NCCL's IB transport functions: a stand-in program
# with ncclIbIsend/ncclIbIrecv/ncclIbTest/ncclIbMultiSend under NCCL
# 2.28's mangled names is recognised and probed; the trace's counts equal
# the program's own log, source "nccl_ib".
source "$(dirname "$0")/lib.sh"
mkfifo "$SCRATCH/gate"
"$TCHECK" -v record -o "$SCRATCH/ib.trace" -- "$TEST_BIN/nccl-ib-transport" --requests 2000 \
	--gate "$SCRATCH/gate" --log "$SCRATCH/ib.log" 2>"$SCRATCH/ib.err" &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
deadline=$((SECONDS + 20))
until grep -q "4 NCCL IB transport functions probed in .*nccl-ib-transport" "$SCRATCH/ib.err"; do
	[ $SECONDS -lt $deadline ] || fail "the transport functions were not probed: $(cat "$SCRATCH/ib.err")"
	sleep 0.05
done
echo go >"$SCRATCH/gate"
wait "$recorder" || fail "record failed: $(cat "$SCRATCH/ib.err")"
"$TCHECK" dump "$SCRATCH/ib.trace" >"$SCRATCH/ib.jsonl"
python3 - "$SCRATCH/ib.jsonl" "$SCRATCH/ib.log" <<'PY' || fail "the trace's work requests differ from the program's log"
import json, sys
log = dict(line.strip().split("=") for line in open(sys.argv[2]) if "=" in line)
pid = int(log.pop("pid"))
samples = [r for r in map(json.loads, open(sys.argv[1]))
           if r.get("kind") == "network" and r["pid"] == pid]
assert samples, "no network samples for the program"
last = samples[-1]
assert last["source"] == "nccl_ib", last
for key, value in log.items():
    assert last[key] == int(value), f"{key}: the program says {value}, the trace {last[key]}"
assert int(log["completion_errors"]) > 0 and last["requests_posted"] > last["requests_signalled"]
print(f"final counts equal the program's: {log}")
PY
