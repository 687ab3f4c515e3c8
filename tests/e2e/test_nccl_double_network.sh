#!/bin/bash
# The NCCL double moving its data through the verbs double
# (NCCL_DOUBLE_VERBS_LIBRARY): every rank's work requests are counted, none
# left in flight at the end; with a provider that stops completing
# (VERBS_DOUBLE_STALL_AFTER) a rank times out waiting on the network and the
# trace shows its signalled requests outstanding, no completion after its
# last post: what a network-side hang looks like.
source "$(dirname "$0")/lib.sh"
export NCCL_DOUBLE_VERBS_LIBRARY="$TEST_BIN/verbs/libibverbs.so.1"
export NCCL_DOUBLE_VERBS_WAIT_MS=20000

# Checks the network samples of the trace $1 against the expectation $2 ("idle" or "stalled").
check_network() {
	"$TCHECK" dump "$1" >"$1.jsonl" || fail "dump of $1 failed"
	python3 - "$1.jsonl" "$2" <<'PY' || fail "the work requests of the ranks are not as expected"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
last = {}
for r in records:
    if r.get("kind") == "network":
        last[r["pid"]] = r
# The launcher makes no NCCL calls; its two rank processes do.
callers = {r["pid"] for r in records if r.get("kind") == "nccl"}
assert len(callers) == 2, f"expected two rank processes, got {callers}"
ranks = callers
assert ranks <= set(last), f"ranks {ranks} but network samples only for {set(last)}"
stalled = []
for pid in ranks:
    s = last[pid]
    assert s["source"] == "verbs" and s["completions"] > 0 and s["completion_errors"] == 0, s
    if s["requests_signalled"] > s["completions"]:
        assert s["last_post_ns"] > s["last_completion_ns"], s
        stalled.append(pid)
if sys.argv[2] == "idle":
    assert not stalled, f"requests left in flight by {stalled}: {last}"
else:
    # The first rank to stall times out; its peers then fail on the broken communicator.
    assert stalled, f"no rank has requests in flight: {last}"
print({pid: (last[pid]["requests_signalled"], last[pid]["completions"]) for pid in ranks})
PY
}

"$TCHECK" record -o "$SCRATCH/ok.trace" -- "$WORKLOAD" --ranks 2 --steps 4 \
	--log-dir "$SCRATCH/ok" 2>"$SCRATCH/ok.err" || fail "the workload failed: $(cat "$SCRATCH/ok.err")"
check_network "$SCRATCH/ok.trace" idle

status=0
VERBS_DOUBLE_STALL_AFTER=60 NCCL_DOUBLE_TIMEOUT_MS=2000 "$TCHECK" record -o "$SCRATCH/stall.trace" \
	-- "$WORKLOAD" --ranks 2 --steps 20 --log-dir "$SCRATCH/stall" 2>"$SCRATCH/stall.err" || status=$?
[ "$status" -ne 0 ] || fail "a stalled network should make the workload fail"
grep -q "network stopped completing work requests" "$SCRATCH/stall.err" ||
	fail "the ranks should say the network stalled: $(tail -5 "$SCRATCH/stall.err")"
check_network "$SCRATCH/stall.trace" stalled
