#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Reference (healthy): 2-rank DistributedDataParallel (gloo, CPU) with gradient clipping.

One command starts both ranks (each a fresh interpreter with RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT in its environment, like torchrun). Each rank trains a
small MLP with SGD and clip_grad_norm_(max_norm 0.5) on its own data; at the end
the ranks compare their parameters. --log holds rank 0's steps and every rank's
under "ranks".

    /usr/bin/python3 ref_ddp_clip.py --steps 10 --log /tmp/ddp.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import pipeline_common as common  # noqa: E402


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 8, 10, generator=generator)
    targets = torch.randn(args.steps, 8, 1, generator=generator)
    steps = []
    for step in range(args.steps):
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(),
                                 grad_norm=float(norm), clipped=True))
    identical = common.replicas_identical(model)
    common.write_log(common.rank_log(args.log, rank), None, None, steps, rank=rank,
                     world_size=world_size, replicas_identical=identical)


def main():
    args = common.parser(__doc__.splitlines()[0], steps=10, distributed=True).parse_args()
    return common.main_ddp(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
