#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: distillation where both models checkpoint their blocks, the teacher under no_grad.

The teacher and the student are one architecture: a stem, two blocks run
through torch.utils.checkpoint's reentrant form, and a head. The teacher's
forward is wrapped in torch.no_grad() only: it stays in training mode and
its parameters require grad, but no gradient reaches them, its
checkpointed blocks are never run again and no optimizer holds it. The
student's blocks are run again by its backward. AdamW, KL divergence at
temperature 2. One process, CPU.

    /usr/bin/python3 checkpointed_teacher.py --steps 10 --log-dir /tmp/checkpointed-teacher
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

import shapes_common as common  # noqa: E402


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.stem = nn.Linear(8, width)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU())
            for _ in range(2))
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = x + checkpoint(block, x, use_reentrant=True)
        return self.head(x)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    teacher, student = Net(48), Net(16)
    optimizer = torch.optim.AdamW(student.parameters(), lr=1e-2)
    inputs = torch.randn(args.steps, 16, 8)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(student.parameters())
        with torch.no_grad():
            soft = torch.softmax(teacher(inputs[step]) / 2.0, dim=1)
        loss = nn.functional.kl_div(torch.log_softmax(student(inputs[step]) / 2.0, dim=1), soft,
                                    reduction="batchmean")
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, student.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
