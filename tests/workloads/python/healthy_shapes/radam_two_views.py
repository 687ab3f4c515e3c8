#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: contrastive learning of two augmented views (SimCLR's NT-Xent) with RAdam.

Each step runs the encoder twice, on two noisy views of one batch, and the
NT-Xent loss pulls each view towards its twin. RAdam changes its own update
rule after its first steps (a momentum-only update while the variance
estimate is not yet reliable, then Adam's), so the operators of its step
differ between the first steps and the later ones, on purpose. One process,
CPU.

    /usr/bin/python3 radam_two_views.py --steps 10 --log-dir /tmp/simclr
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

TEMPERATURE = 0.5


def nt_xent(first, second):
    views = nn.functional.normalize(torch.cat([first, second]), dim=1)
    similarity = views @ views.t() / TEMPERATURE
    similarity.fill_diagonal_(float("-inf"))
    count = first.shape[0]
    targets = torch.cat([torch.arange(count, 2 * count), torch.arange(0, count)])
    return nn.functional.cross_entropy(similarity, targets)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    encoder = nn.Sequential(nn.Linear(20, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, 16))
    optimizer = torch.optim.RAdam(encoder.parameters(), lr=1e-3)
    batches = torch.randn(args.steps, 24, 20)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(encoder.parameters())
        batch = batches[step]
        first = encoder(batch + 0.1 * torch.randn_like(batch))
        second = encoder(batch + 0.1 * torch.randn_like(batch))
        loss = nt_xent(first, second)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, encoder.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
