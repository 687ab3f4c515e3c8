#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a mixture of experts with top-1 routing: experts no token chose get no gradient.

A Switch-style layer: a router picks one of four expert MLPs for each token;
a small batch leaves some experts without a token on some steps, so they take
no part in that step's forward or backward. SGD with momentum over the
router, the experts and the head; gradients set to None, so an expert
without tokens keeps its weights (torch's SGD skips a parameter without a
gradient). One process, CPU.

    /usr/bin/python3 top1_experts.py --steps 10 --log-dir /tmp/experts
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

EXPERTS, WIDTH = 4, 16


class Top1Experts(nn.Module):
    def __init__(self):
        super().__init__()
        self.router = nn.Linear(WIDTH, EXPERTS)
        self.experts = nn.ModuleList(
            [nn.Sequential(nn.Linear(WIDTH, 32), nn.ReLU(), nn.Linear(32, WIDTH))
             for _ in range(EXPERTS)])

    def forward(self, tokens):
        gates = torch.softmax(self.router(tokens), dim=-1)
        weight, choice = gates.max(dim=-1)
        output = torch.zeros_like(tokens)
        used = []
        for index, expert in enumerate(self.experts):
            rows = (choice == index).nonzero(as_tuple=True)[0]
            if rows.numel() == 0:
                continue
            used.append(index)
            output = output.index_add(0, rows, expert(tokens[rows]) * weight[rows, None])
        return tokens + output, used


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    layer, head = Top1Experts(), nn.Linear(WIDTH, 3)
    parameters = list(layer.parameters()) + list(head.parameters())
    optimizer = torch.optim.SGD(parameters, lr=0.05, momentum=0.9)
    inputs, labels = torch.randn(args.steps, 6, WIDTH), torch.randint(0, 3, (args.steps, 6))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(parameters)
        optimizer.zero_grad(set_to_none=True)
        hidden, used = layer(inputs[step])
        loss = nn.functional.cross_entropy(head(hidden), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, parameters), experts_used=used)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
