#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""DDP out of sync (a report on X by @jxmnop): the training loop uses the unwrapped model.

With a trainer that sometimes holds the model as a plain nn.Module and
sometimes wrapped in DistributedDataParallel, a loop that calls the unwrapped
module trains each replica on its own gradients: nothing is all-reduced, the
replicas diverge, every rank's loss looks fine. Here 2 ranks (gloo) train a
small residual MLP with Adam; from step K (3), after an evaluation helper that
unwraps the model for inference, the buggy twin goes on training the module
it got back (`model.module`); the fixed twin keeps training the DDP wrapper.
Symptom per step: the replicas' parameters differ after the step.

    /usr/bin/python3 ddp_out_of_sync_unwrapped.py --bug --log-dir /tmp/ddp-sync
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import bug_common as common  # noqa: E402

TRIGGER = 3


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp, self.hidden, self.out = nn.Linear(6, 20), nn.Linear(20, 20), nn.Linear(20, 1)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        return self.out(h + torch.relu(self.hidden(h)))


def unwrap_for_evaluation(model):
    """What a trainer's evaluation helper returns: the bare module."""
    return model.module if isinstance(model, DistributedDataParallel) else model


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed)
    module = Residual()
    model = DistributedDataParallel(module)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 16, 6, generator=generator)
    targets = torch.randn(args.steps, 16, 1, generator=generator)
    log = common.TruthLog(args, "DDP out of sync", "training goes on with the unwrapped "
                          "module", TRIGGER, rank, world_size)
    training_model = model
    for step in range(args.steps):
        if step == TRIGGER:
            evaluated = unwrap_for_evaluation(model)
            with torch.no_grad():
                evaluated(inputs[0])
            if args.bug:
                training_model = evaluated
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(training_model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        agree = common.replicas_agree(list(module.parameters()))
        log.step(step, not agree, loss=loss.item(), replicas_agree=agree,
                 wrapped=isinstance(training_model, DistributedDataParallel))
    log.close()


def main():
    args = common.parser(__doc__.splitlines()[0], "from step {} the loop trains the "
                         "unwrapped module".format(TRIGGER), distributed=True).parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
