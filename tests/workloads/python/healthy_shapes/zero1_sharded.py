#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a ZeRO-1-style optimizer sharded by hand over the ranks (gloo, CPU).

Every rank holds the whole model; its Adam optimizer holds only its shard of
the parameters (parameter i belongs to rank i % world size). Each step: the
gradients are averaged with all_reduce, each rank steps its shard, each
parameter is broadcast from the rank that owns it, and the gradients are set
to None by hand. The replicas agree after every step although each rank
updated other tensors.

    /usr/bin/python3 zero1_sharded.py --world-size 2 --steps 10 --log-dir /tmp/zero1
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
    # 10 parameter tensors: each rank of up to 10 owns a shard (8 ranks included).
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 1))
    parameters = list(model.parameters())
    owners = [index % world_size for index in range(len(parameters))]
    shard = [p for p, owner in zip(parameters, owners) if owner == rank]
    optimizer = torch.optim.Adam(shard, lr=0.01)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 8, 10, generator=generator)
    targets = torch.randn(args.steps, 8, 1, generator=generator)
    log = common.StepLog(args.log_dir, rank)
    for step in range(args.steps):
        before = common.snapshot(shard)
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        for parameter in parameters:
            dist.all_reduce(parameter.grad)
            parameter.grad /= world_size
        optimizer.step()
        with torch.no_grad():
            for parameter, owner in zip(parameters, owners):
                dist.broadcast(parameter, src=owner)
        for parameter in parameters:
            parameter.grad = None
        log.step(step, optimizer, loss, common.changed(before, shard),
                 shard=[index for index, owner in enumerate(owners) if owner == rank])
    log.close()


def main():
    args = common.parser(__doc__.splitlines()[0], distributed=True).parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
