#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Evaluates hang detection by `tcheck-bpf attach` on jobs already running.

Each run starts the NCCL test double's workload (4 or 8 ranks, about 65 ms
steps) with one seeded hang (`--delay RANK:STEP:WHERE:0`, STEP 40-60, so
the attach comes first), waits until every rank runs, then attaches with
`attach --pid --events` for a few seconds. Busy loops (--load) stand in for
other work on a shared machine: the ranks are then found at different
points of their work, the case mid-run numbering must get right. Judged on
the live reports against the workload's fault file and call logs: the first
hang must name the stalled rank alone and the collective its peers issued
(function and sequence number counted from the communicator's start); any
mismatch or slowdown report is a false alarm (every rank made the same
calls). Prints a Markdown table. Needs root.

    sudo python3 tools/eval/attach-hang-eval.py --runs 20 --load 2
"""
import argparse
import importlib.util
import json
import os
import random
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("hang_eval", os.path.join(HERE, "hang-eval.py"))
hang_eval = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hang_eval)

ATTACH_SECONDS = 5


def wait_for(path, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if os.path.exists(path):
            return True
        time.sleep(0.05)
    return False


def one_run(options, directory, ranks, delay, blocking):
    """Starts the job, attaches, returns the live reports and the log directory."""
    log_dir = os.path.join(directory, "log")
    events = os.path.join(directory, "live.jsonl")
    environment = dict(os.environ, NCCL_DOUBLE_BLOCKING="1" if blocking else "0")
    job = subprocess.Popen([options.workload, "--ranks", str(ranks), "--steps", "100000",
                            "--step-sleep-ms", str(hang_eval.STEP_SLEEP_MS), "--log-dir",
                            log_dir, "--delay", delay],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=environment)
    try:
        if not wait_for(os.path.join(log_dir, f"rank-{ranks - 1}.progress"), 20):
            raise RuntimeError("the workload did not start")
        subprocess.run([options.tcheck, "--quiet", "attach", "--pid", str(job.pid),
                        "--duration", str(ATTACH_SECONDS), "--events", events],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    finally:
        job.kill()
        job.wait()
    return hang_eval.live_findings(events), log_dir


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tcheck", default="./tcheck-bpf")
    parser.add_argument("--workload", default=".output/tests/nccl-workload")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--load", type=int, default=2, help="busy loops beside the job")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--blocking", action="store_true",
                        help="NCCL_DOUBLE_BLOCKING=1: calls return once finished everywhere")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    tally = dict(detected=0, rank=0, collective=0, missed=0, false_alarms=0, runs=0)
    load = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(options.load)]
    started = time.time()
    try:
        for _ in range(options.runs):
            ranks = rng.choice([4, 8])
            rank = rng.randrange(ranks)
            delay = f"{rank}:{rng.randint(40, 60)}:{rng.choice(hang_eval.POSITIONS)}:0"
            with tempfile.TemporaryDirectory(prefix="tcheck-attach-eval.",
                                             dir=hang_eval.SCRATCH) as directory:
                live, log_dir = one_run(options, directory, ranks, delay, options.blocking)
                fault_path = os.path.join(log_dir, f"rank-{rank}.fault")
                if not os.path.exists(fault_path):
                    continue  # the attach ended before the fault: not a run of this table
                tally["runs"] += 1
                fault = json.load(open(fault_path))
                hangs = [r for r in live if r["kind"] == "hang"]
                tally["false_alarms"] += sum(r["kind"] in ("mismatch", "slowdown") for r in live)
                if not hangs:
                    tally["missed"] += 1
                    continue
                tally["detected"] += 1
                rank_ok, collective_ok = hang_eval.judge_hang(hangs[0], fault, log_dir, ranks)
                tally["rank"] += rank_ok
                tally["collective"] += rank_ok and collective_ok
    finally:
        for loop in load:
            loop.kill()
    mode = "blocking" if options.blocking else "asynchronous"
    print(f"{tally['runs']} hangs attached to mid-run ({mode} mode, seed {options.seed}, "
          f"{options.load} busy loops beside the job) in {(time.time() - started) / 60:.1f} "
          "minutes.\n")
    print("| hang detected | rank right | rank and collective right | missed | "
          "false alarms (mismatch, slowdown) |")
    print("|---|---|---|---|---|")
    print(f"| {tally['detected']} | {tally['rank']} | {tally['collective']} | "
          f"{tally['missed']} | {tally['false_alarms']} |")


if __name__ == "__main__":
    main()
