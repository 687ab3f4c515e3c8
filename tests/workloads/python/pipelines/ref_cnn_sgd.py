#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Reference (healthy): a small CNN (dropout) trained with SGD (momentum 0.9), gradients accumulated, evaluated every few steps.

Each optimizer step accumulates the gradients of --micro-batches forward and
backward passes (each loss divided by their number). After every
--eval-every-th optimizer step: model.eval(), a forward pass under
torch.no_grad() on held-out data (dropout off), model.train(). One process,
CPU.

    /usr/bin/python3 ref_cnn_sgd.py --steps 12 --log /tmp/cnn.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                      nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.dropout = nn.Dropout(0.2)
        self.classifier = nn.Linear(8 * 2 * 2, 3)

    def forward(self, images):
        return self.classifier(self.dropout(self.features(images).flatten(1)))


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--eval-every", type=int, default=4, metavar="N",
                         help="evaluate after every N-th step (default 4)")
    options.add_argument("--micro-batches", type=int, default=2, metavar="N",
                         help="forward and backward passes per optimizer step (default 2)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    micro = args.micro_batches
    images = torch.randn(args.steps, micro, 8, 1, 8, 8)
    labels = torch.randint(0, 3, (args.steps, micro, 8))
    held_out = torch.randn(16, 1, 8, 8)
    steps = []
    model.train()
    for step in range(args.steps):
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for part in range(micro):
            loss = nn.functional.cross_entropy(model(images[step][part]), labels[step][part]) / micro
            loss.backward()
            total += loss.item()
        optimizer.step()
        record = common.fact(step, model, optimizer, before, loss=total, evaluated=False,
                             micro_batches=micro)
        if (step + 1) % args.eval_every == 0:
            model.eval()
            with torch.no_grad():
                model(held_out)
            model.train()
            record["evaluated"] = True
        steps.append(record)
    common.write_log(args.log, None, None, steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
