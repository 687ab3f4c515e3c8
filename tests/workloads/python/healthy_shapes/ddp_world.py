#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: DistributedDataParallel at any world size (gloo, CPU), the same program for each.

Each rank trains the same MLP wrapped in DistributedDataParallel with SGD
momentum on its own data (zero_grad before the forward). The global batch is
--batch samples split over the ranks, so a rank's batch shrinks as the world
grows, as it does when a job is scaled out.

    /usr/bin/python3 ddp_world.py --world-size 4 --steps 10 --log-dir /tmp/ddp4
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import shapes_common as common  # noqa: E402


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(10, 24), nn.ReLU(),
                                                  nn.Linear(24, 2)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    per_rank = max(1, args.batch // world_size)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, per_rank, 10, generator=generator)
    targets = torch.randn(args.steps, per_rank, 2, generator=generator)
    log = common.StepLog(args.log_dir, rank)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 world_size=world_size)
    log.close()


def main():
    options = common.parser(__doc__.splitlines()[0], distributed=True)
    options.add_argument("--batch", type=int, default=32, help="global batch (default 32)")
    args = options.parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
