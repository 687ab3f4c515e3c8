#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: convolutions with weight standardisation and group norm (BiT's ResNet-v2 shape).

Each convolution standardises its weight in its forward ((w - mean) / std
over each output filter) and convolves with that new tensor, so the weight
the convolution reads is computed anew at each call; GroupNorm instead of
batch norm. SGD momentum with a linear warm-up scheduler (LambdaLR), an
evaluation in eval() under no_grad every third step, zero_grad() first, one
process, CPU.

    /usr/bin/python3 weight_standardization.py --steps 10 --log-dir /tmp/ws
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


class StdConv2d(nn.Conv2d):
    def forward(self, x):
        weight = self.weight
        mean = weight.mean(dim=(1, 2, 3), keepdim=True)
        std = weight.var(dim=(1, 2, 3), keepdim=True, unbiased=False).add(1e-5).sqrt()
        return nn.functional.conv2d(x, (weight - mean) / std, self.bias, self.stride,
                                    self.padding)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(StdConv2d(3, 8, 3, padding=1, bias=False), nn.GroupNorm(2, 8),
                          nn.ReLU(), StdConv2d(8, 8, 3, padding=1, bias=False),
                          nn.GroupNorm(2, 8), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 5))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.03, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 4))
    inputs, labels = torch.randn(args.steps, 6, 3, 8, 8), torch.randint(0, 5, (args.steps, 6))
    held_out = torch.randn(6, 3, 8, 8)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        optimizer.zero_grad()
        before = common.snapshot(model.parameters())
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        scheduler.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
        if step % 3 == 2:
            model.eval()
            with torch.no_grad():
                model(held_out)
            model.train()
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
