#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: one model, its parameters split between two optimizers stepped one after the other.

Matrices go to SGD with momentum, embeddings, norms and biases to AdamW
(the split that Muon + AdamW recipes and sparse/dense embedding setups use).
Each iteration: both zero_grad(), forward, backward, the first step(), a
look at which matrix it moved most (monitoring code between the two steps,
logged), the second step(). With --same-class both are Adam (two learning
rates kept as two optimizers rather than two parameter groups). One process,
CPU.

    /usr/bin/python3 split_optimizers.py --steps 10 --log-dir /tmp/split
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 16)
        self.hidden = nn.Linear(16, 32)
        self.norm = nn.LayerNorm(32)
        self.out = nn.Linear(32, 32)

    def forward(self, tokens):
        return self.out(self.norm(torch.relu(self.hidden(self.embed(tokens)))))


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--same-class", action="store_true",
                         help="two Adam optimizers instead of SGD and AdamW")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = TinyLM()
    matrices = [model.hidden.weight, model.out.weight]
    others = [p for p in model.parameters() if all(p is not m for m in matrices)]
    if args.same_class:
        optimizers = [torch.optim.Adam(matrices, lr=1e-3), torch.optim.Adam(others, lr=3e-3)]
    else:
        optimizers = [torch.optim.SGD(matrices, lr=0.05, momentum=0.9),
                      torch.optim.AdamW(others, lr=3e-3, weight_decay=0.01)]
    tokens = torch.randint(0, 32, (args.steps, 16, 9))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        matrices_before = common.snapshot(matrices)
        for optimizer in optimizers:
            optimizer.zero_grad()
        logits = model(tokens[step][:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 32), tokens[step][:, 1:].reshape(-1))
        loss.backward()
        optimizers[0].step()
        moved = [(new.detach() - old).abs().max().item()
                 for old, new in zip(matrices_before, matrices)]
        most_moved = max(range(len(matrices)), key=lambda index: moved[index])
        optimizers[1].step()
        log.step(step, optimizers[0], loss, common.changed(before, model.parameters()),
                 most_moved_matrix=most_moved)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
