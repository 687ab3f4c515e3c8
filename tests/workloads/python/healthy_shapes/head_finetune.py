#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: fine-tuning a head on a frozen body (linear probing), model.zero_grad().

The body (a small CNN standing for a pretrained backbone) is frozen from the
start with requires_grad_(False) and kept in eval(), so its batch norm uses
its running statistics; the optimizer holds the head's parameters only. The
loop clears gradients with model.zero_grad(set_to_none=True) and steps an
SGD with a StepLR schedule. One process, CPU.

    /usr/bin/python3 head_finetune.py --steps 10 --log-dir /tmp/probe
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


class Probe(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.head = nn.Linear(32, 5)

    def forward(self, images):
        return self.head(self.body(images))

    def train(self, mode=True):
        super().train(mode)
        self.body.eval()  # the frozen backbone keeps its statistics
        return self


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = Probe()
    model.body.requires_grad_(False)
    optimizer = torch.optim.SGD(model.head.parameters(), lr=0.1, momentum=0.9)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    images, labels = torch.randn(args.steps, 8, 3, 6, 6), torch.randint(0, 5, (args.steps, 8))
    log = common.StepLog(args.log_dir)
    model.train()
    for step in range(args.steps):
        before = common.snapshot(model.head.parameters())
        model.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(images[step]), labels[step])
        loss.backward()
        lr = optimizer.param_groups[0]["lr"]
        optimizer.step()
        schedule.step()
        log.step(step, optimizer, loss, common.changed(before, model.head.parameters()),
                 stepped_lr=lr)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
