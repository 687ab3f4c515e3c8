#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: fine-tuning with the batch norms frozen by hand, model.apply(set_bn_eval).

At the top of each epoch the model is put in train() and then every batch
norm layer back in eval() with model.apply(), the common recipe for
fine-tuning on small batches: the batch norms keep their running
statistics and their affine weights are left out of the optimizer
(requires_grad False), while the convolutions and the head train with SGD
momentum. An epoch is --epoch-steps batches (5). One process, CPU.

    /usr/bin/python3 frozen_batchnorm.py --steps 10 --log-dir /tmp/frozen-bn
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def set_bn_eval(module):
    if isinstance(module, nn.BatchNorm2d):
        module.eval()


def main():
    args = common.parser(__doc__.splitlines()[0], epochs=True).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.requires_grad_(False)
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.05,
                                momentum=0.9)
    images, labels = torch.randn(args.steps, 4, 3, 8, 8), torch.randint(0, 4, (args.steps, 4))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        if step % args.epoch_steps == 0:
            model.train()
            model.apply(set_bn_eval)
        before = common.snapshot(p for p in model.parameters() if p.requires_grad)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss,
                 common.changed(before, (p for p in model.parameters() if p.requires_grad)))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
