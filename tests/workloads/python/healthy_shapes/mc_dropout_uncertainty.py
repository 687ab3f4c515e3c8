#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: Monte Carlo dropout, dropout modules switched back to train() inside eval().

Uncertainty estimates by Monte Carlo dropout (Gal and Ghahramani, 2016)
evaluate a model several times with its dropout layers on: the model is put
in `eval()` (batch norm uses its running statistics) and then each
`nn.Dropout` module is put back in `train()` on purpose, and the spread of
the sampled predictions is the uncertainty. Every 3 steps, 4 samples of a
held-out batch under `no_grad`; training otherwise as usual (SGD with
momentum). One process, CPU.

    /usr/bin/python3 mc_dropout_uncertainty.py --steps 10 --log-dir /tmp/mcdropout
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

SAMPLES = 4


def enable_dropout(model):
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.train()


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.25),
                          nn.Linear(32, 32), nn.ReLU(), nn.Dropout(0.25), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    inputs = torch.randn(args.steps, 16, 8)
    targets = inputs.sum(dim=2, keepdim=True)
    held_out = torch.randn(24, 8)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        model.train()
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        spread = None
        if step % 3 == 2:
            model.eval()
            enable_dropout(model)
            with torch.no_grad():
                samples = torch.stack([model(held_out) for _ in range(SAMPLES)])
            spread = samples.std(dim=0).mean().item()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 uncertainty=spread)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
