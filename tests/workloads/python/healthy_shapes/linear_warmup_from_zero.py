#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: AdamW with a linear warm-up from a learning rate of 0, then a linear decay.

The schedule of transformers' get_linear_schedule_with_warmup, written out
with LambdaLR: the learning rate is 0 at the first step and rises to its
peak over the warm-up, then falls. The first optimizer step therefore
changes no parameter (Adam's update and the decoupled weight decay are both
scaled by the learning rate), on purpose: its log line says
`parameters_changed` false at `lr` 0. Gradient clipping, zero_grad() after
the step, one process, CPU.

    /usr/bin/python3 linear_warmup_from_zero.py --steps 10 --log-dir /tmp/warmup0
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

WARMUP = 3


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 48), nn.GELU(), nn.LayerNorm(48), nn.Linear(48, 3))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    total = args.steps

    def factor(step):
        if step < WARMUP:
            return step / WARMUP
        return max(0.0, (total - step) / max(1, total - WARMUP))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    inputs, labels = torch.randn(args.steps, 16, 10), torch.randint(0, 3, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    optimizer.zero_grad()
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
        schedule.step()
        optimizer.zero_grad()
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
