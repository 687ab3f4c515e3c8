#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: local SGD, each rank training alone and the replicas averaged every few steps.

Every rank starts from the same MLP and trains it alone on its own data with
SGD momentum: no gradient is all-reduced. After every --period-th step
(4) the parameters are averaged over the ranks with all_reduce, as
torch.distributed.algorithms.model_averaging (post-local SGD) and
federated averaging do; the momentum buffers stay each rank's own. Between
two averagings the replicas differ by design.

    /usr/bin/python3 local_sgd.py --world-size 2 --steps 10 --log-dir /tmp/local_sgd
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 8, 10, generator=generator)
    targets = torch.randn(args.steps, 8, 2, generator=generator)
    log = common.StepLog(args.log_dir, rank)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        averaged = (step + 1) % args.period == 0
        if averaged:
            with torch.no_grad():
                for parameter in model.parameters():
                    dist.all_reduce(parameter)
                    parameter /= world_size
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 averaged=averaged)
    log.close()


def main():
    options = common.parser(__doc__.splitlines()[0], distributed=True)
    options.add_argument("--period", type=int, default=4,
                         help="steps between two averagings of the parameters (default 4)")
    args = options.parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
