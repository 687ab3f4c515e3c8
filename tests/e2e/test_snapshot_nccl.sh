#!/bin/bash
# A job of the NCCL test double already hung before tcheck-bpf arrives (rank
# 1 sleeps for ever at the start of step 5, so it never issues that step's
# calls): `snapshot` and `attach` read the state and name rank 1, the world
# communicator and the sequence number of the operation the others wait in,
# in asynchronous mode (calls return at once; the ranks wait in their stream)
# and in blocking mode (the ranks wait inside the NCCL call, which is named).
# The attach's trace holds that state: `check` of it names the same rank and
# sequence number, and attach's live findings (--events) are check's.
# The truth is the workload's own log: the communication calls rank 1 made on
# its world communicator (their number is the sequence number it never
# reached) and the call rank 0 made at that number.
source "$(dirname "$0")/lib.sh"

for blocking in 0 1; do
	dir="$SCRATCH/blocking$blocking"
	mkdir -p "$dir/log"
	NCCL_DOUBLE_BLOCKING=$blocking setsid "$WORKLOAD" --ranks 4 --steps 20 --stall 1:5 \
		--log-dir "$dir/log" >"$dir/out" 2>&1 &
	BACKGROUND_PIDS+=($!)
	deadline=$((SECONDS + 30))
	until grep -q "rank 1 stalls at step 5" "$dir/out"; do
		[ $SECONDS -lt $deadline ] || fail "the workload did not stall: $(tail -3 "$dir/out")"
		sleep 0.1
	done
	# The other ranks run on into the collective rank 1 never joins, and wait there.
	for rank in 0 2 3; do
		wait_until_blocked "$(log_pid "$dir/log/rank-$rank.jsonl")"
	done
	ranks=$(pgrep -f -- "--log-dir $dir/log --worker" | sort -n)
	[ "$(echo "$ranks" | wc -l)" = 4 ] || fail "expected 4 rank processes, found: $ranks"
	pid_options=$(for pid in $ranks; do printf -- '--pid %s ' "$pid"; done)

	started=$(date +%s.%N)
	status=0
	"$TCHECK" snapshot $pid_options --json >"$dir/snapshot.json" 2>"$dir/snapshot.err" || status=$?
	elapsed=$(echo "$(date +%s.%N) - $started" | bc)
	[ "$status" = 1 ] || fail "snapshot exited $status, not 1 (a rank lags): $(snapshot_summary "$dir/snapshot.json") $(cat "$dir/snapshot.err")"
	echo "blocking=$blocking: snapshot read and judged in $elapsed s"
	(($(echo "$elapsed < 5" | bc))) || fail "the snapshot took $elapsed s"
	"$TCHECK" attach $pid_options --duration 2 -o "$dir/hung.trace" --events "$dir/live.jsonl" \
		>"$dir/attach.out" 2>&1 || fail "attach failed: $(tail -3 "$dir/attach.out")"
	status=0
	"$TCHECK" check "$dir/hung.trace" >"$dir/check.out" 2>&1 || status=$?
	[ "$status" = 1 ] || fail "check of the hung job's trace exited $status: $(cat "$dir/check.out")"
	"$TCHECK" check --json "$dir/hung.trace" >"$dir/check.jsonl" 2>"$dir/check-json.err" || true

	python3 - "$dir" "$blocking" <<'PY' || fail "blocking=$blocking: the snapshot does not match the workload's log"
import json, os, sys
directory, blocking = sys.argv[1], sys.argv[2] == "1"
STALL_STEP = 5
COMMUNICATION = {"ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllGather",
                 "ncclReduceScatter", "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend",
                 "ncclRecv"}

def calls_by_communicator(rank):
    """The rank's communication calls per communicator hash, from its own log."""
    records = [json.loads(l) for l in open(os.path.join(directory, "log", f"rank-{rank}.jsonl"))]
    hashes = {}
    for r in records:
        if r["name"] == "ncclCommInitRank":
            hashes[r["args"]["comm_out"]] = r["args"]["comm_hash"]
        elif r["name"] == "ncclCommSplit" and r["args"]["newcomm_out"]:
            hashes[r["args"]["newcomm_out"]] = r["args"]["comm_hash"]
    calls = {}
    for r in records:
        if r["name"] in COMMUNICATION:
            calls.setdefault("0x%016x" % hashes[r["args"]["comm"]], []).append(
                (r["step"], r["name"]))
    return calls

logged = {rank: calls_by_communicator(rank) for rank in range(4)}
snapshot = json.load(open(os.path.join(directory, "snapshot.json")))
pids = {p["rank"]: p["pid"] for p in snapshot["processes"]}
assert sorted(pids) == [0, 1, 2, 3], pids
assert snapshot["findings"], snapshot["summary"]
for finding in snapshot["findings"]:
    # Only the stalled rank is named, on each communicator where it fell behind, at the
    # number of calls it made there: the first it never made.
    assert finding["rank"] == 1 and finding["pid"] == pids[1], finding
    made = logged[1][finding["comm_id"]]
    assert finding["seq"] == len(made), (finding, made)
    assert all(step < STALL_STEP for step, _ in made), made
    waiters = [int(r) for r in finding["waiting_ranks"].split(", ")]
    assert 1 not in waiters and waiters, finding
    # The call waited in: the step's calls repeat, and a blocking call is logged only
    # once it returns, so it is the one at the same place in the step before.
    def call_at(calls, seq):
        before = sum(1 for step, _ in calls if step < STALL_STEP)
        return [name for step, name in calls if step == STALL_STEP - 1][seq - before]
    waited_in = {call_at(logged[w][finding["comm_id"]], finding["seq"]) for w in waiters}
    assert len(waited_in) == 1, (finding, waited_in)
    if blocking and not waited_in <= {"ncclSend", "ncclRecv"}:
        # Inside the call: its name is on the waiting ranks' stacks (a send or receive
        # of a group waits in ncclGroupEnd instead, which names no operation).
        assert finding["collective"] in waited_in, (finding, waited_in)
    else:
        assert finding["collective"] in waited_in | {None}, (finding, waited_in)
# Every process was read, the stuck one included; none is in any NCCL call but the waiters.
stuck = next(p for p in snapshot["processes"] if p["rank"] == 1)
assert all(t["native"] is None for t in stuck["threads"]), stuck["threads"]
summary = "rank 1 (pid {}) never joined".format(pids[1])
assert snapshot["summary"].startswith(summary), snapshot["summary"]
attach = open(os.path.join(directory, "attach.out")).read()
assert "on arrival: snapshot of 4 process(es)" in attach and summary in attach, attach[:2000]
# The trace: check names rank 1 at the snapshot's first finding, and live said the same.
first = snapshot["findings"][0]
check = open(os.path.join(directory, "check.out")).read()
assert "hang on arrival: rank 1 (pid {}) never joined".format(pids[1]) in check, check
assert "seq {} that rank(s)".format(first["seq"]) in check, check
offline = [json.loads(l) for l in open(os.path.join(directory, "check.jsonl")) if l.strip()]
live = [json.loads(l) for l in open(os.path.join(directory, "live.jsonl")) if l.strip()]
hangs = [f for f in offline if f["kind"] == "hang"]
assert hangs and all(h["on_arrival"] and h["rank"] == 1 for h in hangs), offline
assert {(h["comm_id"], h["seq"]) for h in hangs} == {
    (f["comm_id"], f["seq"]) for f in snapshot["findings"]}, (hangs, snapshot["findings"])
assert sorted(r["rank"] for r in hangs[0]["ranks"]) == [0, 1, 2, 3], hangs[0]
assert [f for f in live if f["kind"] == "hang"] == hangs, (live, hangs)
print("blocking={}: rank 1 named at {}".format(int(blocking), [
    (f["comm_id"], f["nranks"], f["seq"], f["collective"]) for f in snapshot["findings"]]))
PY
done
echo "PASS: snapshot of an NCCL job hung before the attach"
