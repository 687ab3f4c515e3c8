#!/bin/bash
# diff of an NCCL-only job whose data-parallel gradient all-reduce changed
# from 4096 to 2048 elements (the NCCL test double's 8-rank job, tensor-
# and pipeline-parallel, `--bucket-elements`): one count difference per
# rank, at the step the workload logged for its first such call (0, on
# the pipeline's first and last stages alike: a step is the period of a
# rank's whole call pattern, and the tensor-parallel all-reduces of the
# same size in forward and backward do not split it), and one name per
# communicator: ranks whose call went to the same communicator (the same
# comm_hash in the workload's log of its ncclCommSplit) read one name,
# other communicators other names.
source "$(dirname "$0")/lib.sh"

JOB=(--ranks 8 --tp 2 --pp 2 --steps 4)
for elements in 4096 2048; do
	"$TCHECK" --quiet record -o "$SCRATCH/b$elements.trace" -- "$WORKLOAD" "${JOB[@]}" \
		--bucket-elements "$elements" --log-dir "$SCRATCH/log$elements" \
		>/dev/null 2>"$SCRATCH/b$elements.stderr" ||
		fail "record of the $elements-element job exited $?: $(tail -3 "$SCRATCH/b$elements.stderr")"
done
status=0
"$TCHECK" diff --json "$SCRATCH/b4096.trace" "$SCRATCH/b2048.trace" >"$SCRATCH/diff.jsonl" ||
	status=$?
[ "$status" = 1 ] || fail "diff of the bucket change exited $status, expected 1"
"$TCHECK" dump -o "$SCRATCH/dump.jsonl" "$SCRATCH/b4096.trace" || fail "dump of the 4096-element job"

python3 - "$SCRATCH" <<'PY' || fail "diff of the bucket change does not match the workload's logs"
import json, os, sys
scratch = sys.argv[1]
differences = [json.loads(line) for line in open(os.path.join(scratch, "diff.jsonl"))
               if '"kind":"difference"' in line]

def logged(rank):
    """The step of the rank's first 4096-element all-reduce, and its communicator's hash."""
    calls = [json.loads(line) for line in open(os.path.join(scratch, "log4096", f"rank-{rank}.jsonl"))]
    hashes = {}
    for call in calls:
        out = call["args"].get("newcomm_out") or call["args"].get("comm_out")
        if out and "comm_hash" in call["args"]:
            hashes[out] = call["args"]["comm_hash"]
    first = next(c for c in calls if c["name"] == "ncclAllReduce" and c["args"]["count"] == 4096)
    return first["step"], hashes[first["args"]["comm"]]

assert sorted(d["job_rank"] for d in differences) == list(range(8)), differences
# The comm_id dump gives each rank's 4096-element all-reduce in the reference.
rank_of_pid = {}
for rank in range(8):
    with open(os.path.join(scratch, "log4096", f"rank-{rank}.jsonl")) as log:
        rank_of_pid[json.loads(log.readline())["pid"]] = rank
dumped = {}
for line in open(os.path.join(scratch, "dump.jsonl")):
    call = json.loads(line)
    if call.get("kind") == "nccl" and call.get("name") == "ncclAllReduce" and \
            call["args"].get("count") == 4096:
        dumped.setdefault(rank_of_pid[call["pid"]], set()).add(call["comm_id"])
names, identities = {}, {}
for difference in differences:
    step, comm_hash = logged(difference["job_rank"])
    assert difference["what"] == "count", difference
    assert (difference["reference"], difference["candidate"]) == (4096, 2048), difference
    assert difference["step"] == step == 0, (difference, step)
    names.setdefault(comm_hash, set()).add(difference["communicator"])
    identities.setdefault(comm_hash, set()).add(difference["comm_id"])
    # check and dump name it by the same comm_id: the call dump gives that rank.
    assert difference["comm_id"] in dumped[difference["job_rank"]], (difference, dumped)
assert all(len(found) == 1 for found in names.values()), names
assert all(len(found) == 1 and None not in found for found in identities.values()), identities
assert len({next(iter(found)) for found in identities.values()}) == 4, identities
assert len({next(iter(found)) for found in names.values()}) == len(names) == 4, names
print("diff: step 0 on every rank,", len(names), "communicators each with one name:",
      sorted(next(iter(found)) for found in names.values()))
PY
echo "PASS: diff names the bucket change at step 0 with one name per communicator"
