#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: optimizer.step(closure) as PyTorch Lightning's automatic optimization runs it.

The closure clears the gradients, runs the forward and the backward; Adam's
step calls it, so all three run inside the optimizer's step. One process,
CPU.

    /usr/bin/python3 closure_step.py --steps 10 --log-dir /tmp/closure
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
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randn(args.steps, 16, 4)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())

        def closure():
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
