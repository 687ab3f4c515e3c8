#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: DDP where rank 0 alone evaluates and saves a checkpoint, the others wait.

As many training scripts do (`if rank == 0:`): every --eval-every steps,
rank 0 evaluates `model.module` in eval() under no_grad on a held-out batch
and saves the state dict (to memory), then every rank meets at a barrier.
The model has batch norm, whose buffers DDP broadcasts from rank 0 at each
forward. SGD momentum, gloo, CPU, at any --world-size.

    /usr/bin/python3 ddp_rank0_evaluates.py --world-size 4 --steps 10 --log-dir /tmp/r0eval
"""
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import shapes_common as common  # noqa: E402


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed)
    model = DistributedDataParallel(nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32),
                                                  nn.ReLU(), nn.Linear(32, 3)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 8, 10, generator=generator)
    labels = torch.randint(0, 3, (args.steps, 8), generator=generator)
    held_in, held_labels = torch.randn(16, 10), torch.randint(0, 3, (16,))
    log = common.StepLog(args.log_dir, rank)
    for step in range(args.steps):
        model.train()
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        accuracy = None
        if (step + 1) % args.eval_every == 0:
            if rank == 0:
                model.module.eval()
                with torch.no_grad():
                    accuracy = (model.module(held_in).argmax(1) == held_labels).float().mean()
                torch.save(model.module.state_dict(), io.BytesIO())
                accuracy = float(accuracy)
            dist.barrier()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 world_size=world_size, accuracy=accuracy)
    log.close()


def main():
    options = common.parser(__doc__.splitlines()[0], distributed=True)
    options.add_argument("--eval-every", type=int, default=3, metavar="K",
                         help="evaluate on rank 0 after every K-th step (default 3)")
    args = options.parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
