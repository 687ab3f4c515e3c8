#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: gradient surgery (PCGrad): two task losses, gradients set by hand, no backward call.

A shared trunk with a regression and a classification head. Each step takes
each task's gradients with `torch.autograd.grad`, projects each onto the
normal plane of the other where they conflict (Yu et al.'s PCGrad), sums
them and sets every parameter's `.grad` by hand before Adam's step; no
`loss.backward()` and no `zero_grad()`.

    /usr/bin/python3 pcgrad_multitask.py --steps 10 --log-dir /tmp/pcgrad
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def flat(gradients, parameters):
    return torch.cat([(g if g is not None else torch.zeros_like(p)).flatten()
                      for g, p in zip(gradients, parameters)])


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    trunk = nn.Sequential(nn.Linear(10, 32), nn.ReLU())
    heads = nn.ModuleList([nn.Linear(32, 1), nn.Linear(32, 3)])
    parameters = list(trunk.parameters()) + list(heads.parameters())
    optimizer = torch.optim.Adam(parameters, lr=0.01)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 16, 10, generator=generator)
    values = torch.randn(args.steps, 16, 1, generator=generator)
    labels = torch.randint(0, 3, (args.steps, 16), generator=generator)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(parameters)
        features = trunk(inputs[step])
        losses = [nn.functional.mse_loss(heads[0](features), values[step]),
                  nn.functional.cross_entropy(heads[1](features), labels[step])]
        tasks = [flat(torch.autograd.grad(loss, parameters, retain_graph=True,
                                          allow_unused=True), parameters) for loss in losses]
        projected = []
        for index, mine in enumerate(tasks):
            other = tasks[1 - index]
            dot = torch.dot(mine, other)
            projected.append(mine - dot / other.norm() ** 2 * other if dot < 0 else mine)
        total, offset = projected[0] + projected[1], 0
        for parameter in parameters:
            parameter.grad = total[offset:offset + parameter.numel()].view_as(parameter).clone()
            offset += parameter.numel()
        optimizer.step()
        log.step(step, optimizer, sum(loss.item() for loss in losses),
                 common.changed(before, parameters))
    log.close()


if __name__ == "__main__":
    sys.exit(main())
