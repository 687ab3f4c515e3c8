#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a column-parallel linear by hand, each rank a shard of the same shape (gloo, CPU).

As Megatron-LM splits a linear's output columns: each rank holds 8 of them
(a `Linear(16, 8)` with its own initial weights) and computes its part of the
hidden layer; the parts are gathered (all_gather) and a replicated head reads
them all, its gradients averaged with all_reduce. One Adam per rank over its
shard and the head: the shards are other values of equal shapes, the head a
replica.

    /usr/bin/python3 tensor_parallel_columns.py --world-size 2 --steps 10 --log-dir /tmp/tp
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed + rank)
    shard = nn.Linear(16, 8)
    torch.manual_seed(args.seed)
    head = nn.Linear(8 * world_size, 1)
    parameters = list(shard.parameters()) + list(head.parameters())
    optimizer = torch.optim.Adam(parameters, lr=0.01)
    generator = torch.Generator().manual_seed(args.seed)
    inputs = torch.randn(args.steps, 8, 16, generator=generator)
    targets = torch.randn(args.steps, 8, 1, generator=generator)
    log = common.StepLog(args.log_dir, rank)
    for step in range(args.steps):
        before = common.snapshot(parameters)
        optimizer.zero_grad()
        part = torch.relu(shard(inputs[step]))
        parts = [torch.empty_like(part) for _ in range(world_size)]
        dist.all_gather(parts, part.detach())
        parts[rank] = part
        loss = nn.functional.mse_loss(head(torch.cat(parts, dim=1)), targets[step])
        loss.backward()
        for parameter in head.parameters():
            dist.all_reduce(parameter.grad)
            parameter.grad /= world_size
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, parameters))
    log.close()


def main():
    args = common.parser(__doc__.splitlines()[0], distributed=True).parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
