#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: dynamic loss scaling by hand, as GradScaler does: a step with overflow is skipped.

The loss is multiplied by a scale before the backward, the gradients divided
by it before the step; when a gradient is not finite the optimizer step is
skipped and the scale halved (GradScaler's rule, written out because torch
1.13 has no GradScaler on CPU). The first scale is too large on purpose, so
the first iterations overflow and skip their step. The log has one line per
optimizer step taken. One process, CPU.

    /usr/bin/python3 loss_scale_skip.py --steps 10 --log-dir /tmp/scale
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
    model = nn.Sequential(nn.Linear(8, 24), nn.Tanh(), nn.Linear(24, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    inputs, targets = torch.randn(args.steps + 8, 16, 8), torch.randn(args.steps + 8, 16, 1)
    scale = 2.0 ** 140  # overflows float32 for a couple of iterations
    log = common.StepLog(args.log_dir)
    step = iteration = 0
    while step < args.steps:
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[iteration]), targets[iteration])
        (loss * scale).backward()
        iteration += 1
        grads = [p.grad for p in model.parameters()]
        if not all(torch.isfinite(g).all() for g in grads):
            scale /= 2.0 ** 40
            continue  # skipped, as GradScaler.step skips
        for grad in grads:
            grad.div_(scale)
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 iteration=iteration)
        step += 1
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
