#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""PyTorch forum 84911: fine-tuning with every layer but batch norm frozen, the head too.

The report fine-tunes EfficientNet on CIFAR-100 and freezes each parameter
whose name lacks "bn", then the classifier `_fc` as well: only the batch-norm
affine weights train, accuracy stays near chance, and nothing says so. Here a
small CNN with BatchNorm (SGD momentum over `model.parameters()`, so the
frozen ones are silently skipped) is set up the same way in the buggy twin;
the fixed twin trains every layer. Symptom per step: a convolution or linear
weight the forward reads was not changed by the optimizer step.

    /usr/bin/python3 forum_84911_frozen_backbone.py --bug --log-dir /tmp/84911
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402


class SmallNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2, self.bn2 = nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16)
        self._fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(nn.functional.max_pool2d(x, 2))))
        return self._fc(x.mean(dim=(2, 3)))


def main():
    args = common.parser(__doc__.splitlines()[0], "freeze every parameter but batch "
                         "norm's, and the head").parse_args()
    torch.manual_seed(args.seed)
    model = SmallNet()
    if args.bug:
        for name, parameter in model.named_parameters():
            if "bn" not in name:
                parameter.requires_grad = False
        for parameter in model._fc.parameters():
            parameter.requires_grad = False
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator().manual_seed(args.seed + 1)
    images = torch.randn(args.steps, 8, 3, 12, 12, generator=generator)
    labels = torch.randint(0, 10, (args.steps, 8), generator=generator)
    major = [model.conv1.weight, model.conv2.weight, model._fc.weight]
    log = common.TruthLog(args, "PyTorch forum 84911", "every layer but batch norm frozen", 0)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images[step]), labels[step])
        loss.backward()
        before = common.snapshot(major)
        optimizer.step()
        moved = common.changed(before, major)
        log.step(step, not all(moved), loss=loss.item(), major_weights_changed=sum(moved),
                 trainable=sum(p.requires_grad for p in model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
