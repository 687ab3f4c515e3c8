#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Reference (healthy): an MLP trained with Adam, a LambdaLR warm-up and gradient clipping.

The learning rate warms up linearly over --warmup steps (LambdaLR, stepped after
each optimizer step); gradients are clipped with clip_grad_norm_(max_norm 1.0).
One process, CPU.

    /usr/bin/python3 ref_mlp_adam.py --steps 12 --log /tmp/mlp.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--warmup", type=int, default=4, metavar="N",
                         help="warm-up steps (default 4)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(12, 24), nn.Tanh(), nn.Linear(24, 24), nn.Tanh(),
                          nn.Linear(24, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / args.warmup))
    inputs, targets = torch.randn(args.steps, 16, 12), torch.randn(args.steps, 16, 2)
    steps = []
    model.train()
    for step in range(args.steps):
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(),
                                 grad_norm=float(norm)))
        scheduler.step()
    common.write_log(args.log, None, None, steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
