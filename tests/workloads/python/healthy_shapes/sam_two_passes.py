#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: sharpness-aware minimisation (SAM): two backward passes and two zero_grad a step.

As the common SAM implementation (davda54/sam) trains: a backward, then
`first_step()` moves each weight up its gradient by rho (in place, by hand),
`zero_grad()`, a second forward and backward at the moved weights, then
`second_step()` puts the weights back and runs the base optimizer's step
(SGD momentum), then `zero_grad()` again.

    /usr/bin/python3 sam_two_passes.py --steps 10 --log-dir /tmp/sam
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


class Sam(torch.optim.Optimizer):
    """SAM around a base optimizer built over the same parameter groups."""

    def __init__(self, parameters, base, rho=0.05, **options):
        super().__init__(parameters, dict(rho=rho, **options))
        self.base = base(self.param_groups, **options)

    @torch.no_grad()
    def first_step(self):
        for group in self.param_groups:
            norm = torch.norm(torch.stack([p.grad.norm() for p in group["params"]
                                           if p.grad is not None]))
            for parameter in group["params"]:
                if parameter.grad is None:
                    continue
                climb = parameter.grad * group["rho"] / (norm + 1e-12)
                parameter.add_(climb)
                self.state[parameter]["climb"] = climb

    @torch.no_grad()
    def second_step(self):
        for group in self.param_groups:
            for parameter in group["params"]:
                if "climb" in self.state[parameter]:
                    parameter.sub_(self.state[parameter]["climb"])
        self.base.step()


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    optimizer = Sam(model.parameters(), torch.optim.SGD, lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 16, 10, generator=generator)
    labels = torch.randint(0, 3, (args.steps, 16), generator=generator)
    parameters = list(model.parameters())
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(parameters)
        nn.functional.cross_entropy(model(inputs[step]), labels[step]).backward()
        optimizer.first_step()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.second_step()
        optimizer.zero_grad()
        log.step(step, optimizer, loss, common.changed(before, parameters))
    log.close()


if __name__ == "__main__":
    sys.exit(main())
