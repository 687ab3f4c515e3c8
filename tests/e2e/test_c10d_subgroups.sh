#!/bin/bash
# c10d subgroups matched across ranks: a 3-rank gloo DDP job whose ranks
# also make the pair groups [0, 1] and [1, 2] (new_group, called by every
# rank; each group built by its two members only) and all-reduce on them
# every step, recorded with plain `record --python`.
# - Fault-free: each pair group is one communicator in the trace, shared by
#   exactly its two members (by their job ranks), with ranks 0 and 1 in it,
#   apart from the world and from each other (ranks 0 and 2 each build one
#   group of size 2: the first of that size for both, not the same group);
#   no hang or mismatch, live or offline, and a slowdown only where the
#   straggler's own log shows that step slow (three ranks on two CPUs).
# - Rank 2 all-reduces 24 elements on [1, 2] at step 6, rank 1 16: a
#   mismatch on that group's communicator, live and offline, with both
#   counts as the ranks logged them, and none on [0, 1].
# e2e-alone: a slowdown (20 ms floor) is allowed only where a rank's own log shows it slow
source "$(dirname "$0")/lib.sh"
torch_stack
# Three ranks importing torch 2.6 under --python on two cores take 20 s at
# times; a mismatch run ends itself when gloo aborts.
ddp_run clean --world-size 3 --pair-groups --steps 16 --timeout 90
ddp_run mismatch --world-size 3 --pair-groups --steps 12 --fault pair-mismatch:2:6 --timeout 90

python3 - "$SCRATCH" <<'PY' || fail "the subgroups in the trace do not match the workload's logs"
import glob, json, os, sys
scratch = sys.argv[1]

def jsonl(path):
    return [json.loads(line) for line in open(path) if line.strip()] if os.path.exists(path) else []

def comm(value):
    return int(value, 0) if isinstance(value, str) else value

def logs(name):
    by_rank = {}
    for path in glob.glob(os.path.join(scratch, name, "log", "rank-*.jsonl")):
        records = jsonl(path)
        if records:
            by_rank[records[0]["rank"]] = records
    return by_rank

def pair_groups(name):
    """{comm_id: {job rank: (group rank, all-reduces of 16 elements)}} from the trace."""
    records = jsonl(os.path.join(scratch, name, "calls.jsonl"))
    job_rank = {}
    for rank, records_of_rank in logs(name).items():
        job_rank[records_of_rank[0]["pid"]] = rank
    groups = {}
    for call in records:
        if call["kind"] != "nccl" or call["name"] != "c10d::allreduce" or call.get("nranks") != 2:
            continue
        ranks = groups.setdefault(comm(call["comm_id"]), {})
        rank = job_rank[call["pid"]]
        previous = ranks.get(rank, (call["rank"], 0))
        assert previous[0] == call["rank"], ("a process changed rank in a group", call)
        ranks[rank] = (call["rank"], previous[1] + 1)
    return groups, records

logged = logs("clean")
assert sorted(logged) == [0, 1, 2], ("not every rank logged", sorted(logged))
pair_calls = {rank: sum(1 for r in records if r["kind"] == "api" and
                        r["call"].startswith("torch.distributed.all_reduce(tensor, group="))
              for rank, records in logged.items()}
groups, records = pair_groups("clean")
world = {comm(c["comm_id"]) for c in records if c["kind"] == "nccl" and c.get("nranks") == 3}
assert len(world) == 1, ("the world is not one communicator", world)
members = sorted(sorted(ranks) for ranks in groups.values())
assert members == [[0, 1], [1, 2]], ("pair groups as traced", groups)
assert not set(groups) & world and 0 not in groups, groups
for comm_id, ranks in groups.items():
    low, high = sorted(ranks)
    assert ranks[low][0] == 0 and ranks[high][0] == 1, ("ranks in the group", comm_id, ranks)
    assert ranks[low][1] == ranks[high][1] > 0, ("calls of the two members", comm_id, ranks)
# Rank 1 all-reduces on both groups, ranks 0 and 2 on one: as each logged.
traced = {rank: sum(calls for ranks in groups.values() for r, (_, calls) in ranks.items() if r == rank)
          for rank in (0, 1, 2)}
assert traced == pair_calls, ("pair all-reduces traced", traced, "logged", pair_calls)
print("clean: pair groups", {hex(c): sorted(r) for c, r in groups.items()}, "calls", traced)

faults = [r for records in logs("mismatch").values() for r in records if r["kind"] == "fault"]
if len(faults) != 2:
    out = open(os.path.join(scratch, "mismatch", "out")).read().splitlines()
    raise AssertionError("the mismatch run did not log both faults: {}\n{}".format(
        faults, "\n".join(out[-8:])))
counts = {f["rank"]: f["elements"] for f in faults}
groups, _ = pair_groups("mismatch")
faulty = [c for c, ranks in groups.items() if sorted(ranks) == faults[0]["group_ranks"]]
assert len(faulty) == 1, groups
for source in ("events.jsonl", "check.jsonl"):
    mismatches = [r for r in jsonl(os.path.join(scratch, "mismatch", source))
                  if r.get("kind") == "mismatch"]
    assert mismatches, ("no mismatch in", source)
    for mismatch in mismatches:
        assert comm(mismatch["comm_id"]) == faulty[0], (source, mismatch, faulty)
        assert {r["job_rank"]: r["last_count"] for r in mismatch["ranks"]} == counts, \
            (source, mismatch, counts)
    print("mismatch", source, ": group", sorted(counts), "counts", counts)
PY
python3 "$ROOT/tests/e2e/slowdowns_borne_out.py" "$SCRATCH/clean" "$SCRATCH/clean/events.jsonl" \
	"$SCRATCH/clean/check.jsonl" || fail "the fault-free run: a report its logs do not bear out"
echo "PASS"
