#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: DDP with torch's ZeroRedundancyOptimizer (ZeRO-1: Adam state sharded over the ranks).

Each rank trains the same MLP wrapped in DistributedDataParallel on its own
data; torch.distributed.optim.ZeroRedundancyOptimizer gives each rank the
Adam state of its share of the parameters, steps that share, and broadcasts
the updated parameters from their owners, so every rank ends each step with
the same weights. Gloo, CPU, one process per rank at any --world-size.

    /usr/bin/python3 zero_redundancy.py --world-size 2 --steps 10 --log-dir /tmp/zero
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import shapes_common as common  # noqa: E402


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(12, 32), nn.ReLU(),
                                                  nn.Linear(32, 32), nn.ReLU(),
                                                  nn.Linear(32, 4)))
    optimizer = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam,
                                        lr=3e-3)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 8, 12, generator=generator)
    labels = torch.randint(0, 4, (args.steps, 8), generator=generator)
    log = common.StepLog(args.log_dir, rank)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 world_size=world_size)
    log.close()


def main():
    args = common.parser(__doc__.splitlines()[0], distributed=True).parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
