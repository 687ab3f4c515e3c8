#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: 2-rank DDP (gloo, CPU) of a LayerNorm MLP with Adam; a rollback restores one rank only.

The training loop keeps the weights of the last good step and rolls back to
them when a step goes wrong (here: at step K, as a loss-spike guard would).
In the buggy twin only rank 0 restores them (the guard sits in rank-0-only
code, next to the logging): DDP averages the gradients, not the weights, so
the replicas hold different parameters from step K on, and every update
operator and scalar stays the same on both ranks. In the fixed twin every rank
restores. Launched like ref_ddp_clip.py. Truth per step and rank:
replicas_identical (an all_gather of parameter checksums after the step).

    /usr/bin/python3 case_ddp_rollback_one_rank.py --bug --log /tmp/ddp-rollback.json
"""
import copy
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
        nn.Linear(12, 24), nn.LayerNorm(24), nn.GELU(), nn.Linear(24, 3)))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    features = torch.randn(args.steps, 16, 12, generator=generator)
    labels = torch.randint(0, 3, (args.steps, 16), generator=generator)
    last_good = copy.deepcopy(model.module.state_dict())
    steps = []
    for step in range(args.steps):
        rolled_back = False
        if step == args.trigger and (rank == 0 or not args.bug):
            model.module.load_state_dict(last_good)
            rolled_back = True
        elif step == args.trigger - 2:
            last_good = copy.deepcopy(model.module.state_dict())
        before = common.snapshot(model)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(features[step]), labels[step])
        loss.backward()
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(),
                                 rolled_back=rolled_back,
                                 replicas_identical=common.replicas_identical(model)))
    common.write_log(common.rank_log(args.log, rank),
                     *common.case_truth(args, "rollback on one rank only"), steps, rank=rank,
                     world_size=world_size,
                     replicas_identical=common.replicas_identical(model))


def main():
    args = common.parser(__doc__.splitlines()[0], bug="only rank 0 restores the weights",
                         trigger=5, steps=10, distributed=True).parse_args()
    return common.main_ddp(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
