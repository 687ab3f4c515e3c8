#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: LoRA adapters over a frozen embedding with non-reentrant checkpointing.

The situation of open-unlearning#178 done right the other way:
torch.utils.checkpoint(use_reentrant=False) needs no input that requires
grad, so the adapters inside the checkpointed blocks get their gradients
although the frozen embedding's output requires none. The base linears and
norms are frozen; AdamW on the adapters and the head. One process, CPU.

    /usr/bin/python3 checkpoint_non_reentrant.py --steps 10 --log-dir /tmp/non-reentrant
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

import shapes_common as common  # noqa: E402

VOCABULARY, WIDTH, RANK = 40, 24, 4


class Adapted(nn.Module):
    """A frozen linear and a trainable low-rank update, B starting at zero."""

    def __init__(self, inputs, outputs):
        super().__init__()
        self.base = nn.Linear(inputs, outputs).requires_grad_(False)
        self.down = nn.Linear(inputs, RANK, bias=False)
        self.up = nn.Linear(RANK, outputs, bias=False)
        nn.init.zeros_(self.up.weight)

    def forward(self, x):
        return self.base(x) + self.up(self.down(x))


class Block(nn.Module):
    """A pre-norm feed-forward block; its last operator to save a tensor for the backward is
    the last adapter's: the recomputation stops there, four module calls deep."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH).requires_grad_(False)
        self.feed_forward = nn.Sequential(Adapted(WIDTH, 2 * WIDTH), nn.GELU(),
                                          Adapted(2 * WIDTH, WIDTH))

    def forward(self, x):
        return x + self.feed_forward(self.norm(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, WIDTH).requires_grad_(False)
        self.blocks = nn.ModuleList(Block() for _ in range(2))
        self.head = nn.Linear(WIDTH, VOCABULARY)

    def forward(self, tokens):
        hidden = self.embedding(tokens)
        for block in self.blocks:
            hidden = checkpoint(block, hidden, use_reentrant=False)
        return self.head(hidden)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = Model()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-2)
    tokens = torch.randint(0, VOCABULARY, (args.steps, 6, 9))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(trainable)
        optimizer.zero_grad()
        logits = model(tokens[step, :, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, VOCABULARY),
                                           tokens[step, :, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, trainable))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
