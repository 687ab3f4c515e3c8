#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: cosine annealing with warm restarts (SGDR), the learning rate back at its top each cycle.

`CosineAnnealingWarmRestarts(T_0=3, T_mult=1)` stepped after every optimizer
step: the rate falls along a cosine for 3 steps, then jumps back to the base
rate, as SGDR (Loshchilov and Hutter) does. A small CNN with batch norm, SGD
with Nesterov momentum and weight decay, zero_grad(set_to_none=True) first,
one process, CPU.

    /usr/bin/python3 sgdr_warm_restarts.py --steps 10 --log-dir /tmp/sgdr
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                                weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=3,
                                                                     eta_min=1e-4)
    inputs = torch.randn(args.steps, 8, 1, 8, 8)
    labels = torch.randint(0, 3, (args.steps, 8))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        optimizer.zero_grad(set_to_none=True)
        before = common.snapshot(model.parameters())
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
        scheduler.step()
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
