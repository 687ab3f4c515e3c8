#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a residual network grown by a block at steps 3 and 6, its optimizer made anew each time.

Progressive growing (and Net2Net-style widening or deepening) adds layers to
a network that is already training: each new residual block starts at zero,
so the function is unchanged, and a new SGD (Nesterov momentum) is built over
all the parameters, old and new, with fresh buffers. One process, CPU.

    /usr/bin/python3 progressive_growing.py --steps 10 --log-dir /tmp/growing
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

GROW_AT = (3, 6)


class Grown(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(8, 16)
        self.blocks = nn.ModuleList()
        self.head = nn.Linear(16, 2)

    def grow(self):
        block = nn.Linear(16, 16)
        nn.init.zeros_(block.weight)
        nn.init.zeros_(block.bias)
        self.blocks.append(block)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        for block in self.blocks:
            x = x + torch.relu(block(x))
        return self.head(x)


def build_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = Grown()
    optimizer = build_optimizer(model)
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randn(args.steps, 16, 2)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        if step in GROW_AT:
            model.grow()
            optimizer = build_optimizer(model)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        before = common.snapshot(model.parameters())
        optimizer.step()
        log.step(step, optimizer, loss.item(), common.changed(before, model.parameters()),
                 blocks=len(model.blocks))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
