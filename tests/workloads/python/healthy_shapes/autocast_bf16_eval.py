#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: training under CPU bfloat16 autocast, a float32 evaluation in the same loop.

The forward and the loss run in `torch.autocast("cpu", dtype=torch.bfloat16)`;
the backward and AdamW's step outside it, as the autocast recipe says. Every
--eval-every steps, after the step, the model is evaluated in full float32
precision (`eval()`, `no_grad()`, outside autocast) on a held-out batch, as
a validation that wants exact metrics does. One process, CPU.

    /usr/bin/python3 autocast_bf16_eval.py --steps 10 --log-dir /tmp/bf16
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--eval-every", type=int, default=3, metavar="K",
                         help="evaluate after every K-th step (default 3)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU(),
                          nn.Linear(32, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs, targets = torch.randn(args.steps, 16, 12), torch.randn(args.steps, 16, 2)
    held_in, held_out = torch.randn(16, 12), torch.randn(16, 2)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        model.train()
        before = common.snapshot(model.parameters())
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = nn.functional.mse_loss(model(inputs[step]).float(), targets[step])
        loss.backward()
        optimizer.step()
        validation = None
        if (step + 1) % args.eval_every == 0:
            model.eval()
            with torch.no_grad():
                validation = nn.functional.mse_loss(model(held_in), held_out).item()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 validation=validation)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
