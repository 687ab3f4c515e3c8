#!/usr/bin/env python3
"""Compares a trace (tcheck-bpf dump --format jsonl) with the workload's own log.

The workload writes, per rank, every NCCL call it made with its arguments and
return code. Every one of them must be in the trace exactly once, in the same
order, with the same values; the trace must hold nothing the application did
not call (calls NCCL makes inside another, depth > 0, are reported apart).
Communicator identities must agree across ranks exactly where the library's
own commHash agrees, and sequence numbers must count each communicator's
calls from its start, in a trace attached mid-run as well. Exit status 0 when everything matches; the first differences otherwise.
"""
import argparse
import collections
import glob
import json
import os
import sys

DATATYPES = ["ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64", "ncclUint64",
             "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
             "ncclFloat8e5m2"]
OPS = ["ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg"]
RESULTS = ["ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
           "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"]
COMMUNICATION = {"ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllGather",
                 "ncclReduceScatter", "ncclAlltoAll", "ncclGather", "ncclScatter", "ncclSend",
                 "ncclRecv"}
# Values the workload logs that the tracer reads elsewhere (checked separately).
NOT_ARGUMENTS = {"comm_hash", "handle_out", "async_error", "tracer_filtered"}
# Arguments x86-64 passes in registers; later ones are on the stack.
REGISTER_ARGUMENTS = 6


def as_number(value):
    """Turns the export's names and hex strings back into integers."""
    if isinstance(value, str):
        if value in DATATYPES:
            return DATATYPES.index(value)
        if value in OPS:
            return OPS.index(value)
        if value in RESULTS:
            return RESULTS.index(value)
        if value.startswith("0x"):
            return int(value, 16)
    return value


def load_jsonl(path):
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def number_from_start(logged):
    """Gives each communication call NCCL accepted its place among its communicator's
    calls since the communicator was made (as "seq_from_start")."""
    seq = collections.Counter()
    for call in logged:
        comm = call["args"].get("comm")
        if call["name"] in COMMUNICATION and call["ret"] == 0:
            call["seq_from_start"] = seq[comm]
            seq[comm] += 1
        # A destroyed handle may come back from the allocator as a new communicator.
        if call["name"] in ("ncclCommDestroy", "ncclCommAbort") and call["ret"] == 0:
            seq.pop(comm, None)


def expected_calls(log_dir, since_step):
    by_pid = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "rank-*.jsonl"))):
        rank = int(os.path.basename(path)[5:-6])
        calls = []
        logged = load_jsonl(path)
        number_from_start(logged)
        # From the first call of the step on (teardown calls are logged as step -1).
        first = next((i for i, c in enumerate(logged) if c.get("step", -1) >= since_step), 0)
        for call in logged[first:]:
            # Polled constantly: the tracer keeps only the failures.
            if call["name"] == "ncclCommGetAsyncError" and call["ret"] == 0 and \
                    call.get("async_error", 0) == 0:
                continue
            calls.append(call)
        if calls:
            by_pid[calls[0]["pid"]] = (rank, calls)
    return by_pid


def compare_call(expected, actual, problems, where):
    if expected["name"] != actual["name"]:
        problems.append(f"{where}: expected {expected['name']}, trace has {actual['name']}")
        return
    if expected["ret"] != actual["ret"]:
        problems.append(f"{where} {expected['name']}: ret {expected['ret']} != {actual['ret']}")
    if expected["tid"] != actual["tid"]:
        problems.append(f"{where} {expected['name']}: tid {expected['tid']} != {actual['tid']}")
    for key, value in expected["args"].items():
        if key in NOT_ARGUMENTS:
            continue
        # The error a poll reports is read back at return: compare the value, not the address.
        if expected["name"] == "ncclCommGetAsyncError" and key == "asyncError":
            if "async_error" in expected and as_number(actual["args"].get(key)) != expected["async_error"]:
                problems.append(f"{where} ncclCommGetAsyncError: error {expected['async_error']} "
                                f"in the log, {actual['args'].get(key)} in the trace")
            continue
        # The id a call writes is read at its return; the argument is its address.
        if expected["name"] == "ncclGetUniqueId" and key == "uniqueId":
            if as_number(actual["unique_id_hash"]) != value:
                problems.append(f"{where} ncclGetUniqueId: id hash {value} in the log, "
                                f"{actual['unique_id_hash']} in the trace")
            continue
        # A stream passed on the stack (the seventh argument or later) is not read by
        # the probe: the trace says null there, never a wrong value, and nowhere else.
        if (key == "stream" and key in actual["args"] and actual["args"][key] is None
                and list(expected["args"]).index(key) >= REGISTER_ARGUMENTS):
            continue
        if key not in actual["args"]:
            problems.append(f"{where} {expected['name']}: argument {key} missing from trace")
        elif as_number(actual["args"][key]) != value:
            problems.append(f"{where} {expected['name']}: {key} = {value} in the log, "
                            f"{actual['args'][key]} in the trace")


def check_communicators(trace, by_pid, problems):
    """comm_id must group handles exactly as the library's commHash does."""
    library_hash = {}
    for pid, (_, calls) in by_pid.items():
        for call in calls:
            out = call["args"].get("comm_out", call["args"].get("newcomm_out"))
            if out and "comm_hash" in call["args"]:
                library_hash[(pid, out)] = call["args"]["comm_hash"]
    our_id = {}
    for record in trace:
        if record.get("kind") == "communicator" and record["comm_id"]:
            our_id[(record["pid"], record["handle"])] = record["comm_id"]
    pairs = set()
    for key, hash_value in library_hash.items():
        if key not in our_id:
            problems.append(f"communicator {key} created in the log has no identity in the trace")
            continue
        pairs.add((hash_value, our_id[key]))
    hashes = collections.Counter(h for h, _ in pairs)
    ids = collections.Counter(i for _, i in pairs)
    for hash_value, our in pairs:
        if hashes[hash_value] > 1 or ids[our] > 1:
            problems.append(f"library commHash {hash_value:#x} and trace comm_id {our} do not "
                            "correspond one to one")
    return len(pairs)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("trace_jsonl")
    parser.add_argument("log_dir")
    parser.add_argument("--since-step", type=int, default=-1,
                        help="compare only calls from this step on (attach mid-run)")
    parser.add_argument("--expect-ranks", type=int, default=0)
    args = parser.parse_args()

    trace = load_jsonl(args.trace_jsonl)
    by_pid = expected_calls(args.log_dir, args.since_step)
    problems = []
    if args.expect_ranks and len(by_pid) != args.expect_ranks:
        problems.append(f"the log has {len(by_pid)} ranks, expected {args.expect_ranks}")

    traced = collections.defaultdict(list)
    nested = 0
    for record in trace:
        if record.get("kind") != "nccl":
            continue
        if record["depth"] != 0:
            nested += 1
            continue
        traced[record["pid"]].append(record)
    env_rank = {r["pid"]: r["rank"] for r in trace if r.get("kind") == "process"}

    compared = 0
    for pid, (rank, calls) in sorted(by_pid.items()):
        actual = sorted(traced.pop(pid, []), key=lambda c: c["ts_ns"])
        if args.since_step >= 0:
            # Attached mid-run and traced to the end: the log's tail is the trace's tail.
            if len(actual) < len(calls):
                problems.append(f"rank {rank} (pid {pid}): {len(calls)} calls in the log from "
                                f"step {args.since_step}, only {len(actual)} in the trace")
            actual = actual[-len(calls):]
        if len(actual) != len(calls):
            problems.append(f"rank {rank} (pid {pid}): {len(calls)} calls in the log, "
                            f"{len(actual)} in the trace")
        if env_rank.get(pid) != rank:
            problems.append(f"rank {rank} (pid {pid}): trace says RANK={env_rank.get(pid)}")
        for index, (expected, got) in enumerate(zip(calls, actual)):
            where = f"rank {rank} call {index}"
            compare_call(expected, got, problems, where)
            # Attached mid-run too, numbered from the communicator's start (the library's count).
            if "seq_from_start" in expected and got["seq"] != expected["seq_from_start"]:
                problems.append(f"{where} {expected['name']}: seq {got['seq']}, "
                                f"expected {expected['seq_from_start']}")
            compared += 1
    for pid, extra in traced.items():
        problems.append(f"pid {pid}: {len(extra)} calls in the trace from a process not in the log")

    matched = check_communicators(trace, by_pid, problems) if args.since_step < 0 else 0
    stats = [r for r in trace if r.get("kind") == "stats"]
    if not stats:
        problems.append("the trace has no stats record")
    else:
        last = stats[-1]
        for counter in ("ringbuf_drops", "nesting_overflows", "process_drops"):
            if last[counter]:
                problems.append(f"{counter} = {last[counter]}")

    print(f"compared {compared} calls of {len(by_pid)} ranks, {nested} nested calls, "
          f"{matched} communicators matched to the library's commHash")
    for problem in problems[:30]:
        print("  " + problem)
    if len(problems) > 30:
        print(f"  ... and {len(problems) - 30} more")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
