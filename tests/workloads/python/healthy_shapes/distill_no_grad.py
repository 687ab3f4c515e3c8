#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: distillation with a teacher run under torch.no_grad() and never put in eval().

Many distillation loops only wrap the teacher's forward in torch.no_grad():
the teacher stays in training mode and its parameters require grad, but no
gradient reaches them and no optimizer holds them. The student learns the
teacher's softened outputs (KL divergence at temperature 2), SGD momentum.
One process, CPU.

    /usr/bin/python3 distill_no_grad.py --steps 10 --log-dir /tmp/distill-no-grad
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
    teacher = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 4))
    student = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
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
