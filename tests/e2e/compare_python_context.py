#!/usr/bin/env python3
"""Checks the Python caller of every NCCL call in a trace against the log of
tests/workloads/python/nccl_context.py: each logged collective is found by
its count, and its py_stack must be the logged frames, named the way
docs/python-tracing.md says (module from the file, then the qualified name),
innermost first, cut to 8. The call from a thread without Python must carry
the main thread's frames behind the "<main thread>" marker.

--attached: the trace began mid-run; only the calls from the first traced
collective on must all be there.
"""
import argparse
import json
import os
import sys

STACK_MAX = 8
COLLECTIVES = ("ncclAllReduce", "ncclBroadcast")


def name_of(frame):
    path, qualified_name = frame
    module = os.path.basename(path)
    if module.endswith(".py"):
        module = module[:-3]
    return f"{module}.{qualified_name}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="tcheck-bpf dump output (JSON Lines)")
    parser.add_argument("log", help="the workload's log")
    parser.add_argument("--attached", action="store_true")
    options = parser.parse_args()
    trace = [json.loads(line) for line in open(options.trace)]
    log = [json.loads(line) for line in open(options.log)]
    calls = [r for r in trace if r.get("kind") == "nccl" and r["depth"] == 0]
    traced = {c["args"]["count"]: c for c in calls if c["name"] in COLLECTIVES}
    logged = {e["count"]: e for e in log if e["function"] in COLLECTIVES}
    assert traced, "no collective in the trace"
    extra = set(traced) - set(logged)
    assert not extra, f"traced collectives the workload did not make: {sorted(extra)}"
    first = min(traced) if options.attached else 1
    missing = [count for count in logged if count >= first and count not in traced]
    assert not missing, f"logged collectives missing from the trace: {missing[:10]}"
    threads = set()
    for count, entry in logged.items():
        if count < first:
            continue
        call = traced[count]
        want = [name_of(frame) for frame in entry["stack"]][:STACK_MAX]
        assert call["name"] == entry["function"], (call["name"], entry)
        assert call["tid"] == entry["tid"], (call["tid"], entry)
        assert call["py_stack"] == want, f"count {count}: traced {call['py_stack']}, logged {want}"
        assert call["step"] is not None, call
        threads.add(entry["thread"])
    assert len(threads) >= 2, f"calls of one thread only: {threads}"
    checked = sum(1 for count in logged if count >= first)
    if not options.attached:
        from_c = [e for e in log if e["thread"] == "c-thread"]
        assert len(from_c) == 1, from_c
        pid = calls[0]["pid"]
        worker = [c for c in calls if c["name"] == "ncclGetUniqueId" and c["tid"] != pid]
        assert len(worker) == 1, f"calls from the C thread: {worker}"
        want = ["<main thread>"] + [name_of(f) for f in from_c[0]["main_stack"]]
        assert worker[0]["py_stack"] == want[:STACK_MAX], (worker[0]["py_stack"], want)
        checked += 1
    print(f"{checked} NCCL calls name their Python caller as logged")


if __name__ == "__main__":
    sys.exit(main())
