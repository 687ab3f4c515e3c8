#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: gradients clipped by value and weight decay applied by hand before a plain SGD step.

The decoupled weight decay of the AdamW paper, written out for SGD: before
each step every weight matrix is shrunk in place under no_grad()
(`p.mul_(1 - lr * wd)`), biases are left alone, gradients are clipped by
value (`clip_grad_value_`), and only then `optimizer.step()` runs. The loss
adds an L1 penalty on the first layer's weights. One process, CPU.

    /usr/bin/python3 clip_value_decay_by_hand.py --steps 10 --log-dir /tmp/decay
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
    model = nn.Sequential(nn.Linear(8, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh(),
                          nn.Linear(24, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    weight_decay = 1e-2
    inputs = torch.randn(args.steps, 20, 8)
    targets = inputs.sum(dim=2, keepdim=True).sin()
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss = loss + 1e-4 * model[0].weight.abs().sum()
        loss.backward()
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() > 1:
                    parameter.mul_(1 - optimizer.param_groups[0]["lr"] * weight_decay)
        nn.utils.clip_grad_value_(model.parameters(), 0.5)
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
