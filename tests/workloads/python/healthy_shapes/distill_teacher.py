#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: knowledge distillation, a student trained against a teacher kept in eval().

As distillation code writes it (RepDistiller's train_distill, for one): at
the top of each epoch the student is put in train() and then the teacher in
eval(), the last mode call of the two. The teacher (dropout and batch norm)
runs under no_grad; the student (batch norm) learns from the labels and the
teacher's softened outputs (KL divergence at temperature 4), SGD with
momentum. An epoch is --epoch-steps batches (5). One process, CPU.

    /usr/bin/python3 distill_teacher.py --steps 10 --log-dir /tmp/distill
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import shapes_common as common  # noqa: E402

TEMPERATURE = 4.0


def main():
    args = common.parser(__doc__.splitlines()[0], epochs=True).parse_args()
    torch.manual_seed(args.seed)
    teacher = nn.Sequential(nn.Linear(12, 48), nn.BatchNorm1d(48), nn.ReLU(), nn.Dropout(0.3),
                            nn.Linear(48, 5))
    student = nn.Sequential(nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5))
    optimizer = torch.optim.SGD(student.parameters(), lr=0.05, momentum=0.9)
    inputs, labels = torch.randn(args.steps, 16, 12), torch.randint(0, 5, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        if step % args.epoch_steps == 0:
            student.train()
            teacher.eval()
        before = common.snapshot(student.parameters())
        with torch.no_grad():
            soft_targets = F.softmax(teacher(inputs[step]) / TEMPERATURE, dim=1)
        logits = student(inputs[step])
        distilled = F.kl_div(F.log_softmax(logits / TEMPERATURE, dim=1), soft_targets,
                             reduction="batchmean") * TEMPERATURE ** 2
        loss = 0.5 * F.cross_entropy(logits, labels[step]) + 0.5 * distilled
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, student.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
