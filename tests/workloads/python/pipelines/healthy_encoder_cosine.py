#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy program: a Transformer encoder classifier with SGD, a cosine schedule and gradient accumulation.

No bug and no twin: a program of yet another shape that a rules file inferred
from the references must leave alone. Each optimizer step accumulates the
gradients of --micro-batches forward and backward passes, clips them, and the
CosineAnnealingLR scheduler moves the learning rate after every step; the
gradients are zeroed in place (zero_grad(set_to_none=False)). Truth per step:
lr, parameters_changed, training.

    /usr/bin/python3 healthy_encoder_cosine.py --log /tmp/encoder.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402


class EncoderClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(6, 16)
        self.encoder = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32,
                                                  dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, sequences):
        return self.head(self.encoder(self.embed(sequences)).mean(dim=1))


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--micro-batches", type=int, default=3, metavar="N",
                         help="forward and backward passes per optimizer step (default 3)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = EncoderClassifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    micro = args.micro_batches
    sequences = torch.randn(args.steps, micro, 4, 5, 6)
    labels = torch.randint(0, 3, (args.steps, micro, 4))
    steps = []
    model.train()
    for step in range(args.steps):
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=False)
        total = 0.0
        for part in range(micro):
            loss = nn.functional.cross_entropy(model(sequences[step][part]),
                                               labels[step][part]) / micro
            loss.backward()
            total += loss.item()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=total, micro_batches=micro))
        scheduler.step()
    common.write_log(args.log, None, None, steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
