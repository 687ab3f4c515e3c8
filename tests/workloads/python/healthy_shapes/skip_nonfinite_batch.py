#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: an iteration whose loss is not finite skips its backward and its step.

Every fourth batch carries a NaN (a corrupt sample); the loop computes the
loss, sees it is not finite, clears the gradients and goes on to the next
batch without backward or step, as many training loops guard themselves.
A CNN with batch norm, SGD momentum at a constant rate, one
process, CPU. One log line per optimizer step taken.

    /usr/bin/python3 skip_nonfinite_batch.py --steps 10 --log-dir /tmp/skipnan
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Conv2d(2, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(6, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    log = common.StepLog(args.log_dir)
    step = iteration = 0
    while step < args.steps:
        inputs = torch.randn(8, 2, 6, 6)
        labels = torch.randint(0, 4, (8,))
        if iteration % 4 == 3:
            inputs[0, 0, 0, 0] = float("nan")
        iteration += 1
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs), labels)
        if not math.isfinite(loss.item()):
            continue
        before = common.snapshot(model.parameters())
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
        step += 1
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
