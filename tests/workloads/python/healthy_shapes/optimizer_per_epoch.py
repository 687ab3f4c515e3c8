#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: an SGD optimizer with momentum made anew at the start of every epoch.

Training loops written in one function per epoch often build their optimizer
inside it, so each epoch starts with fresh momentum buffers (a warm restart
of the optimizer's state, as some curricula and progressive-resizing
schedules do on purpose). The model is the same throughout; every first step
of an epoch builds new buffers. One process, CPU.

    /usr/bin/python3 optimizer_per_epoch.py --steps 10 --log-dir /tmp/perepoch
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def train_epoch(model, inputs, targets, first_step, log):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for offset in range(len(inputs)):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[offset]), targets[offset])
        loss.backward()
        before = common.snapshot(model.parameters())
        optimizer.step()
        log.step(first_step + offset, optimizer, loss.item(),
                 common.changed(before, model.parameters()))


def main():
    args = common.parser(__doc__.splitlines()[0], epochs=True).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randn(args.steps, 16, 2)
    log = common.StepLog(args.log_dir)
    for first in range(0, args.steps, args.epoch_steps):
        last = min(first + args.epoch_steps, args.steps)
        train_epoch(model, inputs[first:last], targets[first:last], first, log)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
