#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: "Learning PyTorch with Examples": forward, loss, zero_grad(), backward, step.

PyTorch's own tutorial loop (a cubic fitted to sin with RMSprop): the
gradients are cleared between the forward and the backward. One process,
CPU.

    /usr/bin/python3 zero_grad_before_backward.py --steps 10 --log-dir /tmp/zgb
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
    model = nn.Sequential(nn.Linear(3, 16), nn.Tanh(), nn.Linear(16, 1), nn.Flatten(0, 1))
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    x = torch.linspace(-3.14, 3.14, 64)
    features = x.unsqueeze(-1).pow(torch.tensor([1, 2, 3]))
    target = torch.sin(x)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        prediction = model(features)
        loss = nn.functional.mse_loss(prediction, target, reduction="sum")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
