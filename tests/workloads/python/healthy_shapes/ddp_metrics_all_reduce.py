#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: DDP whose every rank evaluates its shard and all-reduces the metric and the loss.

As most DDP scripts report metrics: every --eval-every steps each rank
evaluates its own shard of the validation set in eval() under
torch.inference_mode(), then the correct counts and loss sums are added
across ranks with `dist.all_reduce` (outside any backward), and each step
the training loss is averaged across ranks for the log the same way. AdamW,
a cosine schedule, gloo, CPU, at any --world-size.

    /usr/bin/python3 ddp_metrics_all_reduce.py --world-size 4 --steps 10 --log-dir /tmp/metrics
"""
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
    model = DistributedDataParallel(nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.1),
                                                  nn.Linear(32, 4)))
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 8, 12, generator=generator)
    labels = torch.randint(0, 4, (args.steps, 8), generator=generator)
    held_in = torch.randn(12, 12, generator=generator)
    held_labels = torch.randint(0, 4, (12,), generator=generator)
    log = common.StepLog(args.log_dir, rank)
    for step in range(args.steps):
        model.train()
        before = common.snapshot(model.parameters())
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        schedule.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)
        mean_loss /= world_size
        accuracy = None
        if (step + 1) % args.eval_every == 0:
            model.eval()
            with torch.inference_mode():
                logits = model(held_in)
                totals = torch.stack([(logits.argmax(1) == held_labels).sum().float(),
                                      nn.functional.cross_entropy(logits, held_labels,
                                                                  reduction="sum"),
                                      torch.tensor(float(len(held_labels)))])
            totals = totals.clone()
            dist.all_reduce(totals)
            accuracy = float(totals[0] / totals[2])
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 world_size=world_size, mean_loss=float(mean_loss), accuracy=accuracy)
    log.close()


def main():
    options = common.parser(__doc__.splitlines()[0], distributed=True)
    options.add_argument("--eval-every", type=int, default=3, metavar="K",
                         help="evaluate after every K-th step (default 3)")
    args = options.parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
