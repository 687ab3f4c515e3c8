#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: multi-task training by turns: a shared trunk and two heads, one task a step.

Round-robin multi-task learning (as MT-DNN and many multi-dataset recipes
schedule it): each step draws a batch of one task, runs the trunk and that
task's head only, and steps one Adam that holds every parameter. The other
head gets no gradient (zero_grad(set_to_none=True)), so Adam leaves it as it
was: on each step half the heads do not move, on purpose. One process, CPU.

    /usr/bin/python3 alternating_tasks.py --steps 10 --log-dir /tmp/tasks
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
    trunk = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
    heads = nn.ModuleList([nn.Linear(32, 4), nn.Linear(32, 1)])
    parameters = list(trunk.parameters()) + list(heads.parameters())
    optimizer = torch.optim.Adam(parameters, lr=2e-3)
    inputs = torch.randn(args.steps, 16, 12)
    classes, values = torch.randint(0, 4, (args.steps, 16)), torch.randn(args.steps, 16, 1)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        task = step % 2
        before = common.snapshot(parameters)
        optimizer.zero_grad(set_to_none=True)
        output = heads[task](trunk(inputs[step]))
        if task == 0:
            loss = nn.functional.cross_entropy(output, classes[step])
        else:
            loss = nn.functional.mse_loss(output, values[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, parameters), task=task)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
