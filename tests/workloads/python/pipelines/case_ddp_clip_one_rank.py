#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: 2-rank DDP (gloo, CPU) of a Conv1d model with SGD; only one rank clips from step K.

Both ranks clip their gradients with clip_grad_norm_(max_norm 0.2) after
backward (DDP has averaged them). In the buggy twin only rank 0 clips from
step K on (a clipping guarded by `rank == 0`, as logging code is): the
replicas diverge. Launched like ref_ddp_clip.py. Truth per step and rank:
clipped, grad_norm, lr, parameters_changed; replicas_identical at the end.

    /usr/bin/python3 case_ddp_clip_one_rank.py --bug --log /tmp/ddp-clip.json
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
    model = DistributedDataParallel(nn.Sequential(
        nn.Conv1d(1, 4, 5), nn.ReLU(), nn.AdaptiveMaxPool1d(2), nn.Flatten(), nn.Linear(8, 1)))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.5)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    signals = torch.randn(args.steps, 8, 1, 16, generator=generator)
    targets = torch.randn(args.steps, 8, 1, generator=generator)
    steps = []
    for step in range(args.steps):
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(signals[step]), targets[step])
        loss.backward()
        clip = not (args.bug and step >= args.trigger and rank != 0)
        norm = nn.utils.clip_grad_norm_(model.parameters(), 0.2) if clip else None
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(), clipped=clip,
                                 grad_norm=None if norm is None else float(norm)))
    identical = common.replicas_identical(model)
    common.write_log(common.rank_log(args.log, rank),
                     *common.case_truth(args, "clipping on one rank only"), steps, rank=rank,
                     world_size=world_size, replicas_identical=identical)


def main():
    args = common.parser(__doc__.splitlines()[0], bug="from step K only rank 0 clips",
                         trigger=5, steps=10, distributed=True).parse_args()
    return common.main_ddp(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
