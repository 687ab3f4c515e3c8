#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: two losses, two backward calls (the first retaining the graph), one step; clip by value.

A shared trunk with a classification and a regression head; SGD with
Nesterov momentum, clip_grad_value_. One process, CPU.

    /usr/bin/python3 two_losses_retain.py --steps 10 --log-dir /tmp/twoloss
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
    trunk = nn.Sequential(nn.Linear(8, 32), nn.ReLU())
    head_a, head_b = nn.Linear(32, 4), nn.Linear(32, 1)
    parameters = list(trunk.parameters()) + list(head_a.parameters()) + list(head_b.parameters())
    optimizer = torch.optim.SGD(parameters, lr=0.05, momentum=0.9, nesterov=True)
    inputs = torch.randn(args.steps, 16, 8)
    labels, values = torch.randint(0, 4, (args.steps, 16)), torch.randn(args.steps, 16, 1)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(parameters)
        optimizer.zero_grad()
        features = trunk(inputs[step])
        loss_a = nn.functional.cross_entropy(head_a(features), labels[step])
        loss_b = nn.functional.mse_loss(head_b(features), values[step])
        loss_a.backward(retain_graph=True)
        loss_b.backward()
        nn.utils.clip_grad_value_(parameters, 0.5)
        optimizer.step()
        log.step(step, optimizer, loss_a + loss_b, common.changed(before, parameters))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
