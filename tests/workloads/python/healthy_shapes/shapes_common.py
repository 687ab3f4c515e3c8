# SPDX-License-Identifier: MIT
"""What the healthy-shape programs share: options, the per-step JSON Lines log, ranks.

Every program takes --steps N and --log-dir DIR (a distributed one also
--world-size N) and writes DIR/rank-R.jsonl, one JSON object per optimizer
step (counted from 0) with what the program saw itself: the learning rate it
stepped with, the loss, whether the step changed the parameters the rank
updates. Distributed programs start one fresh interpreter per rank with the
launcher of ../pipelines/pipeline_common.py (gloo, CPU).
Torch APIs used here work on torch 1.13 and 2.6 (CPU).
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipelines"))

import pipeline_common  # noqa: E402


def parser(description, steps=10, distributed=False, world_size=2, epochs=False):
    """The options every program takes; epochs: also --epoch-steps N (5), batches per epoch."""
    options = argparse.ArgumentParser(
        description=description,
        epilog="DIR/rank-R.jsonl is the run's truth: see README.md in this folder.")
    options.add_argument("--steps", type=int, default=steps,
                         help="optimizer steps (default {})".format(steps))
    options.add_argument("--seed", type=int, default=7, help="model and data seed (default 7)")
    options.add_argument("--log-dir", required=True, metavar="DIR",
                         help="write DIR/rank-R.jsonl, one line per step")
    if epochs:
        options.add_argument("--epoch-steps", type=int, default=5, metavar="N",
                             help="batches per epoch (default 5)")
    if distributed:
        options.add_argument("--world-size", type=int, default=world_size, metavar="N",
                             help="ranks (default {})".format(world_size))
        options.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return options


def snapshot(parameters):
    return [parameter.detach().clone() for parameter in parameters]


def changed(before, parameters):
    return any(not torch.equal(old, new.detach()) for old, new in zip(before, parameters))


class StepLog:
    """DIR/rank-R.jsonl, written one line per step (flushed, so a cut run keeps its steps)."""

    def __init__(self, log_dir, rank=0):
        os.makedirs(log_dir, exist_ok=True)
        self.rank = rank
        self.file = open(os.path.join(log_dir, "rank-{}.jsonl".format(rank)), "w",
                         encoding="utf-8")

    def step(self, step, optimizer, loss, parameters_changed, **extra):
        record = {"step": step, "rank": self.rank, "lr": optimizer.param_groups[0]["lr"],
                  "loss": float(loss), "parameters_changed": parameters_changed}
        record.update(extra)
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()

    def close(self):
        self.file.close()


def main_distributed(args, train_rank):
    """A distributed program's entry point: the launcher, or (with --worker) one rank."""
    if args.worker:
        pipeline_common.run_worker(args, train_rank)
    return pipeline_common.launch(args.world_size, timeout_s=300)
