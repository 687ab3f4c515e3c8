#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: two optimizers over one deep model, each followed at once by an EMA of its parameters.

A residual MLP of 20 blocks: its matrices go to SGD with momentum, its biases
and norms to AdamW. The loop steps the optimizers one after the other, and
right after each one's step moves an exponential moving average of that
optimizer's parameters (a mul_ and an add_ per tensor under no_grad, as
per-group EMA helpers do), so some forty in-place operators run between the
two optimizers' steps. One process, CPU.

    /usr/bin/python3 ema_per_optimizer.py --steps 10 --log-dir /tmp/ema-per-optimizer
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

BLOCKS, WIDTH, DECAY = 20, 16, 0.99


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.linear = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, WIDTH)

    def forward(self, x):
        return x + torch.tanh(self.linear(self.norm(x)))


class Average:
    """An EMA of some parameters, moved after their optimizer's step."""

    def __init__(self, parameters):
        self.parameters = list(parameters)
        self.shadow = [parameter.detach().clone() for parameter in self.parameters]

    @torch.no_grad()
    def update(self):
        for kept, trained in zip(self.shadow, self.parameters):
            kept.mul_(DECAY).add_(trained, alpha=1 - DECAY)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(6, WIDTH), *[Block() for _ in range(BLOCKS)],
                          nn.Linear(WIDTH, 3))
    matrices = [p for p in model.parameters() if p.dim() == 2]
    others = [p for p in model.parameters() if p.dim() != 2]
    optimizers = [torch.optim.SGD(matrices, lr=0.02, momentum=0.9),
                  torch.optim.AdamW(others, lr=1e-3, weight_decay=0.01)]
    averages = [Average(matrices), Average(others)]
    inputs, labels = torch.randn(args.steps, 16, 6), torch.randint(0, 3, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        for optimizer in optimizers:
            optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        for optimizer, average in zip(optimizers, averages):
            optimizer.step()
            average.update()
        log.step(step, optimizers[0], loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
