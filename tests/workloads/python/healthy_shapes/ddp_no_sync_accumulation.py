#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: DDP gradient accumulation with no_sync(), 3 micro-batches per step.

Each rank runs two micro-batches inside model.no_sync() (gradients kept
local) and the third outside it (the all-reduce happens there), then steps
Adam and clears with zero_grad(set_to_none=True). Gloo, CPU, one process per
rank at any --world-size.

    /usr/bin/python3 ddp_no_sync_accumulation.py --world-size 2 --steps 10 --log-dir /tmp/nosync
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import shapes_common as common  # noqa: E402

MICRO = 3


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(10, 20), nn.ReLU(),
                                                  nn.Linear(20, 3)))
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, MICRO, 6, 10, generator=generator)
    labels = torch.randint(0, 3, (args.steps, MICRO, 6), generator=generator)
    log = common.StepLog(args.log_dir, rank)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        for micro in range(MICRO):
            loss = nn.functional.cross_entropy(model(inputs[step, micro]),
                                               labels[step, micro]) / MICRO
            if micro < MICRO - 1:
                with model.no_sync():
                    loss.backward()
            else:
                loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 micro_batches=MICRO, world_size=world_size)
    log.close()


def main():
    args = common.parser(__doc__.splitlines()[0], distributed=True).parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
