#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: SGD with ReduceLROnPlateau stepped on a validation loss every 3 steps (patience 0).

The validation runs in eval() under no_grad() after every third step; the
learning rate halves whenever it did not improve. One process, CPU.

    /usr/bin/python3 plateau.py --steps 10 --log-dir /tmp/plateau
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
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0)
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randn(args.steps, 16, 4)
    held_in, held_out = torch.randn(32, 8), torch.randn(32, 4)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        model.train()
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
        if step % 3 == 2:
            model.eval()
            with torch.no_grad():
                validation = nn.functional.mse_loss(model(held_in), held_out)
            scheduler.step(validation)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
