#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a tiny language model whose output layer shares the embedding's weight.

The weight tying of GPT-2 and most language models: one Parameter read
twice per forward (embedding and output projection), appearing once in the
optimizer. A GRU in between, dropout, Adam, and an evaluation of a held-out
batch in eval() under no_grad every 4 steps. One process, CPU.

    /usr/bin/python3 tied_embeddings.py --steps 10 --log-dir /tmp/tied
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

VOCAB, WIDTH = 30, 16


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.rnn = nn.GRU(WIDTH, WIDTH, batch_first=True)
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(WIDTH, VOCAB, bias=False)
        self.out.weight = self.embed.weight  # tied

    def forward(self, tokens):
        hidden, _ = self.rnn(self.drop(self.embed(tokens)))
        return self.out(self.drop(hidden))


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = TinyLM()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    tokens = torch.randint(0, VOCAB, (args.steps, 8, 9))
    held_out = torch.randint(0, VOCAB, (8, 9))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        model.train()
        optimizer.zero_grad()
        logits = model(tokens[step, :, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                           tokens[step, :, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        held_out_loss = None
        if step % 4 == 3:
            model.eval()
            with torch.no_grad():
                held_out_loss = float(nn.functional.cross_entropy(
                    model(held_out[:, :-1]).reshape(-1, VOCAB), held_out[:, 1:].reshape(-1)))
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 held_out_loss=held_out_loss)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
