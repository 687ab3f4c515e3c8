#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a sparse embedding trained by SparseAdam beside Adam for the dense layers.

A recommendation-style model: `nn.Embedding(sparse=True)` gives a sparse
gradient over the rows a batch looked up, which only `SparseAdam` takes, so
the embedding has an optimizer of its own and the dense tower another (as
PyTorch's docs and DLRM-style code set it up). Each step moves the rows the
batch used and no other. Evaluation under `torch.inference_mode()` every
third step. One process, CPU.

    /usr/bin/python3 sparse_embedding.py --steps 10 --log-dir /tmp/sparse
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

ITEMS = 200


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    embedding = nn.Embedding(ITEMS, 16, sparse=True)
    tower = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
    sparse = torch.optim.SparseAdam(list(embedding.parameters()), lr=0.01)
    dense = torch.optim.Adam(tower.parameters(), lr=0.003)
    users, items = torch.randint(0, ITEMS, (args.steps, 32)), torch.randint(0, ITEMS,
                                                                          (args.steps, 32))
    clicks = torch.randint(0, 2, (args.steps, 32, 1)).float()
    parameters = list(embedding.parameters()) + list(tower.parameters())

    def score(step):
        pair = torch.cat([embedding(users[step]), embedding(items[step])], dim=1)
        return tower(pair)

    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(parameters)
        sparse.zero_grad()
        dense.zero_grad()
        loss = nn.functional.binary_cross_entropy_with_logits(score(step), clicks[step])
        loss.backward()
        sparse.step()
        dense.step()
        evaluation = None
        if step % 3 == 2:
            with torch.inference_mode():
                evaluation = float(nn.functional.binary_cross_entropy_with_logits(
                    score(step), clicks[step]))
        log.step(step, dense, loss, common.changed(before, parameters), evaluation=evaluation)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
