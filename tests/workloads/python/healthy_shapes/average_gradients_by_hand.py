#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: data parallelism written by hand, as PyTorch's distributed tutorial does.

"Writing Distributed Applications with PyTorch": every rank builds the same
model (parameters broadcast from rank 0 once), and after each backward
`average_gradients` all-reduces every parameter's gradient and divides it by
the world size before a plain SGD step. No DistributedDataParallel; gloo, CPU,
at any --world-size.

    /usr/bin/python3 average_gradients_by_hand.py --world-size 4 --steps 10 --log-dir /tmp/avg4
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def average_gradients(model, world_size):
    for parameter in model.parameters():
        dist.all_reduce(parameter.grad.data, op=dist.ReduceOp.SUM)
        parameter.grad.data /= world_size


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed + rank)
    model = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 4))
    for parameter in model.parameters():
        dist.broadcast(parameter.data, src=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 8, 10, generator=generator)
    labels = torch.randint(0, 4, (args.steps, 8), generator=generator)
    log = common.StepLog(args.log_dir, rank)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        average_gradients(model, world_size)
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 world_size=world_size)
    log.close()


def main():
    args = common.parser(__doc__.splitlines()[0], distributed=True).parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
