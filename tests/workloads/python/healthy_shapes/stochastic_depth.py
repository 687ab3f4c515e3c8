#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: stochastic depth: whole residual blocks skipped at random while training.

torchvision's StochasticDepth in "batch" mode (ResNet-D, ConvNeXt and ViT
recipes): in training each residual block is skipped for the whole batch with
probability 0.4 (its output scaled when kept); a skipped block takes no part
in that step, so with gradients set to None SGD leaves it as it was. Every
third step an evaluation in eval() under no_grad runs every block. One
process, CPU.

    /usr/bin/python3 stochastic_depth.py --steps 10 --log-dir /tmp/depth
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

SKIP = 0.4


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.ReLU())

    def forward(self, x, generator):
        if self.training:
            if torch.rand((), generator=generator).item() < SKIP:
                return x
            return x + self.body(x) / (1 - SKIP)
        return x + self.body(x)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed + 1)
    stem, head = nn.Linear(8, 24), nn.Linear(24, 2)
    blocks = nn.ModuleList([Block(24) for _ in range(4)])
    modules = nn.ModuleList([stem, blocks, head])
    optimizer = torch.optim.SGD(modules.parameters(), lr=0.05, momentum=0.9)
    inputs, labels = torch.randn(args.steps, 16, 8), torch.randint(0, 2, (args.steps, 16))

    def forward(x):
        x = stem(x)
        for block in blocks:
            x = block(x, generator)
        return head(x)

    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        modules.train()
        before = common.snapshot(modules.parameters())
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(forward(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        evaluation = None
        if step % 3 == 2:
            modules.eval()
            with torch.no_grad():
                evaluation = float(nn.functional.cross_entropy(forward(inputs[step]),
                                                               labels[step]))
        log.step(step, optimizer, loss, common.changed(before, modules.parameters()),
                 evaluation=evaluation)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
