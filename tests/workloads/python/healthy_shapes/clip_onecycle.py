#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: AdamW with weight decay off for biases and norms, gradient clipping, OneCycleLR.

Two parameter groups (the usual no-decay split of biases and LayerNorm
weights), clip_grad_norm_ before each step, a OneCycleLR schedule stepped
after it, and the gradients cleared with optimizer.zero_grad() right after
the backward's use, at the end of the iteration. One process, CPU.

    /usr/bin/python3 clip_onecycle.py --steps 10 --log-dir /tmp/onecycle
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
    model = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 16))
    decay = [p for name, p in model.named_parameters() if name.endswith("weight") and p.dim() > 1]
    no_decay = [p for name, p in model.named_parameters()
                if not (name.endswith("weight") and p.dim() > 1)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=5e-3,
                                                   total_steps=args.steps + 1)
    inputs = torch.randn(args.steps, 12, 16)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        loss = nn.functional.mse_loss(model(inputs[step]), inputs[step].flip(1))
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 grad_norm=float(norm))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
