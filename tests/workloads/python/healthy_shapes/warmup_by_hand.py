#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a learning-rate warm-up written out in the training loop, no scheduler.

For the first --warmup steps the loop sets every param group's "lr" by hand
to base * (step + 1) / warmup, then leaves it at base. An MLP with SGD
momentum, zero_grad before the forward, one process, CPU.

    /usr/bin/python3 warmup_by_hand.py --steps 10 --log-dir /tmp/warmup
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

BASE_LR = 0.05


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--warmup", type=int, default=4, metavar="N",
                         help="warm-up steps (default 4)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 20), nn.Tanh(), nn.Linear(20, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=BASE_LR, momentum=0.9)
    inputs, targets = torch.randn(args.steps, 16, 10), torch.randn(args.steps, 16, 2)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        if step < args.warmup:
            for group in optimizer.param_groups:
                group["lr"] = BASE_LR * (step + 1) / args.warmup
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
