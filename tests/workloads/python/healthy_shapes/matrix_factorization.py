#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: matrix factorisation of raw parameter tensors, with no nn.Module.

A recommendation tutorial's model: a ratings matrix, 30 users by 40 items,
a third of it observed, approximated by the product of two factor matrices
P and Q kept as nn.Parameter tensors (no module, no layer). Adam over
[P, Q], zero_grad(), the masked squared error plus an L2 penalty,
backward(), step(). One process, CPU.

    /usr/bin/python3 matrix_factorization.py --steps 10 --log-dir /tmp/factorisation
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import shapes_common as common  # noqa: E402

USERS, ITEMS, RANK = 30, 40, 5


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    ratings = torch.randn(USERS, RANK) @ torch.randn(RANK, ITEMS)
    observed = torch.rand(USERS, ITEMS) < 0.3
    users = torch.nn.Parameter(0.1 * torch.randn(USERS, RANK))
    items = torch.nn.Parameter(0.1 * torch.randn(ITEMS, RANK))
    optimizer = torch.optim.Adam([users, items], lr=0.05)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot([users, items])
        optimizer.zero_grad()
        error = (users @ items.t() - ratings)[observed]
        loss = (error ** 2).mean() + 1e-3 * (users.pow(2).sum() + items.pow(2).sum())
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, [users, items]))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
