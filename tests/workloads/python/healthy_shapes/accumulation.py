#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: gradients of 4 micro-batches accumulated before each optimizer step.

Each step runs 4 forward and backward passes (the loss divided by 4), then
optimizer.step() and optimizer.zero_grad(). An MLP with SGD, one process, CPU.

    /usr/bin/python3 accumulation.py --steps 10 --log-dir /tmp/accumulation
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

MICRO_BATCHES = 4


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    inputs = torch.randn(args.steps, MICRO_BATCHES, 8, 6)
    targets = torch.randn(args.steps, MICRO_BATCHES, 8, 1)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        total = 0.0
        for micro in range(MICRO_BATCHES):
            loss = nn.functional.mse_loss(model(inputs[step, micro]), targets[step, micro])
            (loss / MICRO_BATCHES).backward()
            total += loss.item() / MICRO_BATCHES
        optimizer.step()
        optimizer.zero_grad()
        log.step(step, optimizer, total, common.changed(before, model.parameters()),
                 micro_batches=MICRO_BATCHES)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
