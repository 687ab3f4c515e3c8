#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: a residual MLP with SGD; the optimizer is built on parameters the model does not use.

The model keeps a leftover `projection` layer that forward() no longer calls.
The buggy twin builds the optimizer on model.projection.parameters() (meant:
model.parameters()): from step 0 the optimizer steps on parameters that get
no gradient and the layers in use never change. The fixed twin builds it on
model.parameters(). Truth per step: parameters_changed, optimizer_updates_model
(whether the optimizer holds a parameter forward() uses), lr, training.

    /usr/bin/python3 case_resmlp_unused.py --bug --log /tmp/resmlp.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402


class ResidualMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(10, 16)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(16, 16), nn.GELU()) for _ in range(2))
        self.out = nn.Linear(16, 1)
        self.projection = nn.Linear(16, 16)  # left over from an older version; unused

    def forward(self, inputs):
        hidden = self.stem(inputs)
        for block in self.blocks:
            hidden = hidden + block(hidden)
        return self.out(hidden)


def main():
    args = common.parser(__doc__.splitlines()[0],
                         bug="the optimizer is built on an unused layer's parameters (from step 0)"
                         ).parse_args()
    torch.manual_seed(args.seed)
    model = ResidualMLP()
    optimizer = torch.optim.SGD(model.projection.parameters() if args.bug else model.parameters(),
                                lr=0.02)
    used = {id(p) for name, p in model.named_parameters() if not name.startswith("projection.")}
    inputs, targets = torch.randn(args.steps, 8, 10), torch.randn(args.steps, 8, 1)
    steps = []
    model.train()
    for step in range(args.steps):
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(),
                                 optimizer_updates_model=any(
                                     id(p) in used for p in optimizer.param_groups[0]["params"])))
    common.write_log(args.log, *common.case_truth(args, "optimizer on unused parameters"), steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
