#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a small CNN with Adam that sets the gradients to None after the optimizer's step.

The loop is forward, backward, optimizer.step(), then
optimizer.zero_grad(set_to_none=True). One process, CPU.

    /usr/bin/python3 set_to_none_after_step.py --steps 10 --log-dir /tmp/none
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
    model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    inputs, labels = torch.randn(args.steps, 8, 1, 8, 8), torch.randint(0, 3, (args.steps, 8))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
