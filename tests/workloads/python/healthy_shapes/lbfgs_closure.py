#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: LBFGS stepped with a closure that zeroes, runs the forward and the backward.

PyTorch's neural style transfer tutorial (and many curve fits) step LBFGS
as optimizer.step(closure): LBFGS evaluates the closure up to max_iter
times a step (4 here), so each step runs zero_grad, the forward and the
backward several times, all inside the optimizer's step. One process, CPU.

    /usr/bin/python3 lbfgs_closure.py --steps 10 --log-dir /tmp/lbfgs-closure
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, history_size=5)
    inputs, targets = torch.randn(64, 8), torch.randn(64, 1)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())

        def closure():
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(inputs), targets)
            loss.backward()
            return loss

        loss = optimizer.step(closure)
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
