# SPDX-License-Identifier: MIT
"""What the real-bug reproductions share: options, the per-step JSON Lines truth, the DDP start.

Every program here takes --steps N --log-dir DIR (and --world-size N where it is
distributed), --seed S and --bug (the buggy twin; without it the fixed twin).
Each rank writes DIR/rank-R.jsonl: a first line {"kind": "run", "program",
"bug" (null in a fixed twin), "trigger_step" (null in a fixed twin), "rank",
"world_size", "torch"}, then one {"kind": "step", "step": k, "symptom": bool,
...} per optimizer step (counted from 0, the tool's step), where "symptom" is
what the program measured itself: whether the bug's effect shows at that step.
The trigger step of a buggy twin is the first step whose symptom is true on
some rank; a fixed twin shows none. Torch APIs used work on torch 1.13 and 2.6.
"""
import argparse
import hashlib
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipelines"))
import pipeline_common  # noqa: E402  (the DDP launcher and gloo start)


def parser(description, bug, steps=10, distributed=False):
    """Options of a reproduction; bug says what --bug turns on."""
    options = argparse.ArgumentParser(
        description=description,
        epilog="The JSON Lines logs (--log-dir) are the run's truth: see README.md here.")
    options.add_argument("--steps", type=int, default=steps,
                         help="optimizer steps (default {})".format(steps))
    options.add_argument("--log-dir", default=None, metavar="DIR",
                         help="write DIR/rank-R.jsonl, the per-step truth")
    options.add_argument("--seed", type=int, default=7, help="model and data seed (default 7)")
    options.add_argument("--bug", action="store_true", help="the buggy twin: " + bug)
    if distributed:
        options.add_argument("--world-size", type=int, default=2,
                             help="ranks, each a process (gloo, CPU; default 2)")
        options.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return options


class TruthLog:
    """DIR/rank-R.jsonl: the run's header, then one record per step, flushed as it goes."""

    def __init__(self, args, program, bug, trigger, rank=0, world_size=1):
        self.handle = None
        if not args.log_dir:
            return
        os.makedirs(args.log_dir, exist_ok=True)
        self.handle = open(os.path.join(args.log_dir, "rank-{}.jsonl".format(rank)), "w",
                           encoding="utf-8")
        self.write({"kind": "run", "program": program, "bug": bug if args.bug else None,
                    "trigger_step": trigger if args.bug else None, "rank": rank,
                    "world_size": world_size, "torch": torch.__version__})

    def write(self, record):
        if self.handle:
            self.handle.write(json.dumps(record) + "\n")
            self.handle.flush()

    def step(self, step, symptom, **facts):
        record = {"kind": "step", "step": step, "symptom": bool(symptom)}
        record.update(facts)
        self.write(record)

    def close(self):
        if self.handle:
            self.handle.close()


def digest(tensors):
    """A hex digest of the tensors' bytes (what a replica holds)."""
    hasher = hashlib.sha1()
    for tensor in tensors:
        hasher.update(tensor.detach().contiguous().numpy().tobytes())
    return hasher.hexdigest()[:16]


def snapshot(tensors):
    return [tensor.detach().clone() for tensor in tensors]


def changed(before, tensors):
    """Which of the tensors differ from their snapshot (a list of booleans)."""
    return [not torch.equal(old, new.detach()) for old, new in zip(before, tensors)]


def replicas_agree(tensors):
    """Whether every rank holds the same values (an all_gather of their sums)."""
    import torch.distributed as dist
    checksum = torch.stack([tensor.detach().double().sum() for tensor in tensors])
    gathered = [torch.zeros_like(checksum) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, checksum)
    return all(torch.equal(values, gathered[0]) for values in gathered)


def main_distributed(args, train_rank):
    """A distributed program's entry: starts --world-size ranks, or (--worker) runs one."""
    if args.worker:
        pipeline_common.run_worker(args, train_rank)
    return pipeline_common.launch(args.world_size)
