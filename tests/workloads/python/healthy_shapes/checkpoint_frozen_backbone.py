#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a frozen backbone run through reentrant checkpointing, a head trained on it.

The backbone (an embedding and two blocks) is frozen with
requires_grad_(False) and its blocks are still run through
torch.utils.checkpoint(use_reentrant=True), as a model with gradient
checkpointing switched on is: no input of a block requires grad, so the
backward never runs them again, which is right here, since nothing in them
trains. A linear head trained by SGD with momentum; every third step a
validation batch under torch.no_grad() without eval(). One process, CPU.

    /usr/bin/python3 checkpoint_frozen_backbone.py --steps 10 --log-dir /tmp/frozen-checkpointed
"""
import os
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

import shapes_common as common  # noqa: E402

VOCABULARY, WIDTH = 50, 24


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, WIDTH)
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(WIDTH, 2 * WIDTH), nn.ReLU(), nn.Linear(2 * WIDTH, WIDTH))
            for _ in range(2))

    def forward(self, tokens):
        hidden = self.embedding(tokens)
        for block in self.blocks:
            hidden = hidden + checkpoint(block, hidden, use_reentrant=True)
        return hidden.mean(dim=1)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    backbone = Backbone().requires_grad_(False)
    head = nn.Linear(WIDTH, 3)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)
    tokens = torch.randint(0, VOCABULARY, (args.steps, 8, 10))
    labels = torch.randint(0, 3, (args.steps, 8))
    validation = torch.randint(0, VOCABULARY, (8, 10))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(head.parameters())
        optimizer.zero_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "None of the inputs have requires_grad=True"
            features = backbone(tokens[step])
        loss = nn.functional.cross_entropy(head(features), labels[step])
        loss.backward()
        optimizer.step()
        if step % 3 == 2:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                head(backbone(validation)).argmax(dim=1)
        log.step(step, optimizer, loss, common.changed(before, head.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
