#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A training worker that raises, under launchers that catch its exception.

--launcher spawn: torch.multiprocessing.spawn starts --world-size workers,
each training a small model for --steps steps; worker --fault-rank raises
ValueError in check_batch at step --fault-step. spawn's worker wrapper
catches it, queues its text for the parent and calls sys.exit(1); the
parent raises ProcessRaisedException with that text.

--launcher elastic: one process whose main is decorated with
torch.distributed.elastic's @record, which catches the exception, writes
it to TORCHELASTIC_ERROR_FILE when that is set, and raises it again.

Each worker logs JSON lines to LOG_DIR/rank-N.jsonl: {"kind": "start",
"pid", "rank"}, one {"kind": "step"} per finished step, and, before it
raises, {"kind": "raise", "pid", "rank", "step", "type", "message",
"function"}.

    /usr/bin/python3 launcher_exceptions.py --launcher spawn --log-dir /tmp/spawn
"""
import argparse
import json
import os
import sys

import torch
import torch.multiprocessing
from torch.distributed.elastic.multiprocessing.errors import record


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--launcher", choices=("spawn", "elastic"), default="spawn")
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--fault-rank", type=int, default=1)
    parser.add_argument("--fault-step", type=int, default=3)
    parser.add_argument("--log-dir", required=True)
    return parser.parse_args()


def check_batch(batch, step, rank, log):
    """Refuses the batch of the fault step, as a data check would."""
    if step == log.fault_step and rank == log.fault_rank:
        message = "batch {} of rank {} failed its check: {} rows".format(step, rank, batch.shape[0])
        log.write({"kind": "raise", "pid": os.getpid(), "rank": rank, "step": step,
                   "type": "ValueError", "message": message, "function": "check_batch"})
        raise ValueError(message)


class Log:
    def __init__(self, log_dir, rank, fault_rank, fault_step):
        os.makedirs(log_dir, exist_ok=True)
        self.file = open(os.path.join(log_dir, "rank-{}.jsonl".format(rank)), "w")
        self.fault_rank, self.fault_step = fault_rank, fault_step

    def write(self, entry):
        self.file.write(json.dumps(entry) + "\n")
        self.file.flush()


def train(rank, steps, log_dir, fault_rank, fault_step):
    log = Log(log_dir, rank, fault_rank, fault_step)
    log.write({"kind": "start", "pid": os.getpid(), "rank": rank})
    torch.manual_seed(rank)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(steps):
        batch = torch.randn(8, 4)
        check_batch(batch, step, rank, log)
        optimizer.zero_grad()
        loss = model(batch).pow(2).mean()
        loss.backward()
        optimizer.step()
        log.write({"kind": "step", "step": step, "loss": loss.item()})


@record
def elastic_main(arguments):
    train(0, arguments.steps, arguments.log_dir, arguments.fault_rank, arguments.fault_step)


def main():
    arguments = parse_arguments()
    if arguments.launcher == "elastic":
        elastic_main(arguments)
        return
    torch.multiprocessing.spawn(train, nprocs=arguments.world_size,
                                args=(arguments.steps, arguments.log_dir, arguments.fault_rank,
                                      arguments.fault_step))


if __name__ == "__main__":
    sys.exit(main())
