#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: activation checkpointing (torch.utils.checkpoint) on the middle blocks, Adam.

Each of three hidden blocks is run through checkpoint(), so the backward
pass runs the block's forward again and a backward pass of its own. One
process, CPU.

    /usr/bin/python3 checkpointed.py --steps 10 --log-dir /tmp/ckpt
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

import shapes_common as common  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(8, 32)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(32, 32), nn.GELU()) for _ in range(3))
        self.out = nn.Linear(32, 2)

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=True)
        return self.out(x)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randint(0, 2, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
