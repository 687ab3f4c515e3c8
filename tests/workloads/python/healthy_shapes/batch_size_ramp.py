#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a batch size that ramps up, and sequences bucketed by length.

The batch grows from 4 to 16 samples over the first steps (GPT-3's batch
ramp), and each batch comes from one length bucket, so every step's input
has another shape: (batch, length) among (4, 6), (8, 12), (16, 9), ...
A GRU tagger with an embedding and a linear head, Adam with its learning
rate scaled with the batch, zero_grad() after the step, one process, CPU.

    /usr/bin/python3 batch_size_ramp.py --steps 10 --log-dir /tmp/ramp
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

VOCABULARY, TAGS, BASE_LR = 50, 5, 2e-3
BATCHES = (4, 8, 12, 16)
LENGTHS = (6, 12, 9, 15)


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCABULARY, 16)
        self.rnn = nn.GRU(16, 24, batch_first=True)
        self.head = nn.Linear(24, TAGS)

    def forward(self, tokens):
        hidden, _ = self.rnn(self.embed(tokens))
        return self.head(hidden)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = Tagger()
    optimizer = torch.optim.Adam(model.parameters(), lr=BASE_LR)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        batch = BATCHES[min(step, len(BATCHES) - 1)]
        length = LENGTHS[step % len(LENGTHS)]
        for group in optimizer.param_groups:
            group["lr"] = BASE_LR * batch / BATCHES[-1]
        tokens = torch.randint(0, VOCABULARY, (batch, length))
        tags = torch.randint(0, TAGS, (batch, length))
        before = common.snapshot(model.parameters())
        loss = nn.functional.cross_entropy(model(tokens).reshape(-1, TAGS), tags.reshape(-1))
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 batch=batch, length=length)
        optimizer.zero_grad()
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
