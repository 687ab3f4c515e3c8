#!/usr/bin/env python3
"""Checks that every slowdown reported on a fault-free run of
tests/workloads/python/train_ddp.py is one the straggler's own log bears
out, and that nothing else was reported.

A two-core machine busy with other work can hold a rank back for a step of
tens of milliseconds: its own log then shows that step that long, which is a
real straggler, not a false alarm. A slowdown counts as borne out when the
step that holds the straggler's last arrival, or a step on either side of
it, is longer than the rank's median step by at least half the reported
lead. Hangs and mismatches are never allowed, nor a slowdown within a second
of a checkpoint the workload logged (`--checkpoint-every`): a healthy pause
that the tool must not take for a straggler, though the saving rank's log
shows that step long.

Usage: slowdowns_borne_out.py [--hangs-judged-apart] RUN_DIR REPORTS.jsonl...
(RUN_DIR holds the workload's log/ folder). --hangs-judged-apart leaves the
hangs to the caller: a run with a fault it logged, whose hang the caller
checks against the fault. Exit status 0 when all is borne out, 1 otherwise.
"""
import bisect
import json
import os
import sys


def jsonl(path):
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def steps_around(log_dir, rank, at_ns):
    """The rank's usual step (its median, from its own backward calls) and the lengths of the
    step that holds at_ns and of the steps on either side of it."""
    starts = sorted(r["ts_ns"] for r in jsonl(os.path.join(log_dir, "rank-{}.jsonl".format(rank)))
                    if r.get("api") == "torch._tensor.Tensor.backward")
    lengths = [b - a for a, b in zip(starts, starts[1:])]
    if not lengths:
        return None, []
    step = bisect.bisect_right(starts, at_ns) - 1
    return sorted(lengths)[len(lengths) // 2], lengths[max(step - 1, 0):step + 2]


def checkpoints(log_dir):
    """(start, end) of every checkpoint a rank logged, in ns."""
    return [(record["ts_ns"], record["end_ns"]) for name in sorted(os.listdir(log_dir))
            if name.startswith("rank-") and name.endswith(".jsonl")
            for record in jsonl(os.path.join(log_dir, name)) if record.get("kind") == "checkpoint"]


def main():
    arguments = sys.argv[1:]
    judged = ("hang", "slowdown", "mismatch")
    if arguments[:1] == ["--hangs-judged-apart"]:
        arguments, judged = arguments[1:], ("slowdown", "mismatch")
    if len(arguments) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    log_dir = os.path.join(arguments[0], "log")
    reports = [r for path in arguments[1:] if os.path.exists(path) for r in jsonl(path)
               if r.get("kind") in judged]
    unexplained = [r for r in reports if r["kind"] != "slowdown"]
    saved = checkpoints(log_dir)
    for slowdown in (r for r in reports if r["kind"] == "slowdown"):
        straggler = slowdown["stragglers"][0]
        usual, around = steps_around(log_dir, straggler["job_rank"], straggler["last_ts_ns"])
        if not around or max(around) - usual < slowdown["lead_ns"] / 2 or \
                any(start - 1e9 <= straggler["last_ts_ns"] <= end + 1e9 for start, end in saved):
            unexplained.append(slowdown)
            continue
        print("host noise: job rank {} late by {:.1f} ms; its steps then {} ms, usually {:.1f}"
              .format(straggler["job_rank"], slowdown["lead_ns"] / 1e6,
                      [round(length / 1e6, 1) for length in around], usual / 1e6))
    if unexplained:
        print("reports the workload's logs do not bear out: {}".format(unexplained),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
