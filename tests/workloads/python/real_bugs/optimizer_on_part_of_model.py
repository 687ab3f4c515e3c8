#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""An optimizer built over part of the model: `optim.SGD(model.out.parameters())`.

A copy-paste from a fine-tuning recipe hands the optimizer the head's
parameters only, although every layer is meant to train (all require grad,
all get gradients): the body never changes, the loss still falls a little
from the head alone. The buggy twin builds the optimizer over `model.out`;
the fixed twin over `model.parameters()`. Symptom per step: a parameter with
a gradient, read by the forward, was not changed by the step.

    /usr/bin/python3 optimizer_on_part_of_model.py --bug --log-dir /tmp/part-optimizer
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh())
        self.out = nn.Linear(24, 1)

    def forward(self, x):
        return self.out(self.body(x))


def main():
    args = common.parser(__doc__.splitlines()[0], "the optimizer holds the head's "
                         "parameters only").parse_args()
    torch.manual_seed(args.seed)
    model = Regressor()
    parameters = model.out.parameters() if args.bug else model.parameters()
    optimizer = torch.optim.SGD(parameters, lr=0.05)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 16, 8, generator=generator)
    targets = torch.randn(args.steps, 16, 1, generator=generator)
    log = common.TruthLog(args, "optimizer over part of the model", "the body never updated", 0)
    everything = list(model.parameters())
    for step in range(args.steps):
        optimizer.zero_grad()
        model.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        before = common.snapshot(everything)
        optimizer.step()
        moved = common.changed(before, everything)
        log.step(step, not all(moved), loss=loss.item(), parameters_changed=sum(moved),
                 parameters=len(everything))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
