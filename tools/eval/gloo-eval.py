#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Evaluates hang, slowdown and mismatch detection on PyTorch's gloo collectives.

Runs tests/workloads/python/train_ddp.py (CPU DistributedDataParallel over
gloo) under `tcheck-bpf record --python --events`, as the README tells a user
to record a PyTorch job, with seeded random --fault injections: a rank that
stops before its backward pass (a hang), a rank that sleeps before each
backward from some step on (a slowdown), a rank that all-reduces a tensor of
another size (a mismatch), and fault-free runs. Each trace is then judged by
`tcheck-bpf check --json`; the truth is the workload's own log, where the
faulty rank writes a "fault" record (rank, step, time, element counts)
before it acts. Prints a Markdown table. Needs root.
"""
import argparse
import glob
import json
import os
import random
import shlex
import signal
import subprocess
import sys
import tempfile
import time

# Absolute: a torch root runs it from its own working directory.
WORKLOAD = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "tests", "workloads",
                                        "python", "train_ddp.py"))
STEPS = 40
SLOW_MS = (150, 250)
NICENESS = -15


def jsonl(path):
    try:
        return [json.loads(line) for line in open(path) if line.strip()]
    except FileNotFoundError:
        return []


def run(options, directory, world_size, fault):
    """Records one run of the workload; returns its check reports, live reports and faults."""
    log_dir = os.path.join(directory, "log")
    trace = os.path.join(directory, "job.trace")
    events = os.path.join(directory, "live.jsonl")
    # Ahead of other work on a shared machine, as the NCCL evaluation's runs.
    command = ["nice", "-n", str(NICENESS), options.tcheck, "record", "--python", "--events", events, "-o", trace, "--"]
    command += shlex.split(options.python) + [
        WORKLOAD, "--world-size", str(world_size), "--steps", str(STEPS), "--log-dir", log_dir,
        "--timeout", str(options.timeout)]
    if fault:
        command += ["--fault", fault]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    process.wait()
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    checked = subprocess.run([options.tcheck, "check", "--json", trace], capture_output=True,
                             text=True)
    # Crash reports are judged apart: a fault run's launcher ends its ranks when one fails.
    reports = [json.loads(line) for line in checked.stdout.splitlines() if line.strip()]
    faults = [r for path in glob.glob(os.path.join(log_dir, "rank-*.jsonl"))
              for r in jsonl(path) if r.get("kind") == "fault"]
    return reports, jsonl(events), faults


def names_rank(report, rank):
    if report["kind"] == "hang":
        return [r["job_rank"] for r in report["lagging_ranks"]] == [rank]
    if report["kind"] == "slowdown":
        return [r["job_rank"] for r in report["stragglers"]] == [rank]
    odd = report.get("odd_rank")
    return odd is not None and report["ranks"][odd]["job_rank"] == rank


def judge(kind, reports, faults, tally):
    """One run's verdicts: 'kind' is the fault injected, or None for a fault-free run."""
    crashes = [r for r in reports if r["kind"] == "crash"]
    reports = [r for r in reports if r["kind"] != "crash"]
    if kind is None:
        tally["clean_fp"] += len(reports) + len(crashes)
        return {"false_positives": len(reports) + len(crashes)}
    if not faults:
        tally[kind + "_fn"] += 1
        tally["not_injected"] += 1
        return {"not_injected": True}
    fault = faults[0]
    found = [r for r in reports if r["kind"] == kind]
    right = [r for r in found if names_rank(r, fault["fault_rank"])]
    verdict = {"found": len(found), "right": len(right)}
    if kind == "hang":
        # The collective it never issued, and the same as the first call it did not make.
        right = [r for r in right if r["collective"] == fault["next_call"] and
                 (r["lagging_ranks"][0].get("missed_call") or {}).get("function") ==
                 fault["next_call"]]
        if right:
            verdict["latency_s"] = (right[0]["detected_ns"] - fault["ts_ns"]) / 1e9
            tally["hang_latency"].append(verdict["latency_s"])
    if kind == "mismatch":
        elements = {f["rank"]: f["elements"] for f in faults}
        right = [r for r in right
                 if {x["job_rank"]: x["last_count"] for x in r["ranks"]} == elements]
    if kind == "slowdown":
        right = [r for r in right if r["detected_ns"] > fault["ts_ns"]]
    if right:
        tally[kind + "_tp"] += 1
    else:
        tally[kind + "_fn"] += 1
    # The first right report is the detection; any other report is a false positive.
    other = len(reports) - (1 if right else 0)
    if kind == "slowdown":
        other = len(reports) - len(right)
    tally[kind + "_fp"] += other
    verdict["false_positives"] = other
    return verdict


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tcheck", default="./tcheck-bpf")
    parser.add_argument("--python", default="/usr/bin/python3",
                        help="the interpreter with torch, as a command line (default "
                             "/usr/bin/python3: Debian's torch 1.13)")
    parser.add_argument("--stack", default="torch 1.13", help="the stack's name in the table")
    parser.add_argument("--hangs", type=int, default=10)
    parser.add_argument("--slowdowns", type=int, default=10)
    parser.add_argument("--mismatches", type=int, default=5)
    parser.add_argument("--clean", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=int, default=45,
                        help="seconds the workload's launcher gives its ranks (a hang run "
                             "lasts this long; torch 2.6 in its root takes seconds to start)")
    parser.add_argument("--details", help="write one JSON line per run here")
    options = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("gloo-eval: run as root (the recorder loads BPF programs)")
    chooser = random.Random(options.seed)
    plan = []
    for _ in range(options.hangs):
        world = chooser.choice((2, 3))
        plan.append(("hang", world, f"stop:{chooser.randrange(world)}:{chooser.randint(3, 30)}"))
    for _ in range(options.slowdowns):
        world = chooser.choice((2, 3))
        plan.append(("slowdown", world, f"slow:{chooser.randrange(world)}:"
                     f"{chooser.randint(12, 30)}:{chooser.randint(*SLOW_MS)}"))
    for _ in range(options.mismatches):
        plan.append(("mismatch", 3, f"mismatch:{chooser.randrange(3)}:{chooser.randint(3, 30)}"))
    for _ in range(options.clean):
        plan.append((None, chooser.choice((2, 3)), None))
    tally = {key: 0 for kind in ("hang", "slowdown", "mismatch")
             for key in (kind + "_tp", kind + "_fp", kind + "_fn")}
    tally.update(clean_fp=0, not_injected=0, hang_latency=[])
    details = open(options.details, "w") if options.details else None
    started = time.time()
    for number, (kind, world, fault) in enumerate(plan):
        with tempfile.TemporaryDirectory(prefix="tcheck-gloo-eval.") as directory:
            reports, live, faults = run(options, directory, world, fault)
            verdict = judge(kind, reports, faults, tally)
        print(f"run {number + 1}/{len(plan)}: {fault or 'fault-free'} on {world} ranks: "
              f"{verdict}", file=sys.stderr)
        if details:
            details.write(json.dumps({"fault": fault, "world_size": world, "reports": reports,
                                      "live_reports": live, "faults": faults,
                                      "verdict": verdict}) + "\n")
    elapsed = time.time() - started
    print_table(options, tally, elapsed)


def print_table(options, tally, elapsed):
    def row(name, kind):
        tp, fp, fn = tally[kind + "_tp"], tally[kind + "_fp"], tally[kind + "_fn"]
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        return f"| {name} | {tp} | {fp} | {fn} | {precision:.2f} | {recall:.2f} |"

    print(f"**gloo ({options.stack})**: `train_ddp.py` (CPU DistributedDataParallel over gloo, "
          f"2 or 3 ranks, {STEPS} steps) recorded with `tcheck-bpf record --python --events`; "
          f"{options.hangs} hangs (a rank stops before its backward pass at a random step), "
          f"{options.slowdowns} slowdowns (a rank sleeps {SLOW_MS[0]}-{SLOW_MS[1]} ms before "
          f"each backward from a random step on), {options.mismatches} mismatches (3 ranks; "
          f"one all-reduces 72 elements, the others 64) and {options.clean} fault-free runs "
          f"(seed {options.seed}) in {elapsed / 60:.1f} minutes. A true positive names the "
          f"faulty rank (and, for a hang, the all-reduce it never issued, as the collective "
          f"and as the first call it did not make; for a mismatch, "
          f"every rank's element count as the ranks logged it); every other report is a "
          f"false positive.")
    print()
    print("| what | true positives | false positives | false negatives | precision | recall |")
    print("|---|---|---|---|---|---|")
    print(row("hang: rank, collective and first call not made", "hang"))
    print(row("slowdown: straggler", "slowdown"))
    print(row("mismatch: rank and counts", "mismatch"))
    print(f"| fault-free runs (any report, crashes included) | - | {tally['clean_fp']} | - | - | - |")
    latencies = sorted(tally["hang_latency"])
    if latencies:
        print()
        print(f"Hang latency, from the stopped rank's fault record to `detected_ns`: median "
              f"{latencies[len(latencies) // 2]:.1f} s, max {latencies[-1]:.1f} s (a rank that "
              f"stops before the job's step time is learned is reported after 10 s).")
    if tally["not_injected"]:
        print()
        print(f"{tally['not_injected']} run(s) ended before the fault was injected "
              f"(counted as false negatives).")


if __name__ == "__main__":
    main()
