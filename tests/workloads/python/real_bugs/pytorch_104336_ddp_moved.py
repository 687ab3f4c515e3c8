#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pytorch#104336: a DDP model moved to another device (or dtype) and back stops syncing.

DistributedDataParallel hooks the gradient accumulators of the parameters it
wrapped; moving the wrapped model (`ddp.cpu(); ddp.cuda(rank)` in the report)
swaps each parameter's data for a tensor of another kind, autograd drops the
accumulators, and the hooks never fire again: every rank steps with its own
gradients and the replicas drift apart, with no error. On CPU the same happens
with a dtype round trip (`ddp.double(); ddp.float()`, an offload to float64 and
back). The buggy twin does it at step K (3) on every rank; the fixed twin
re-wraps the module in a new DDP after the move (the report's first fix).
Symptom per step: the replicas' parameters differ after the step.

    /usr/bin/python3 pytorch_104336_ddp_moved.py --bug --log-dir /tmp/104336
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import bug_common as common  # noqa: E402

TRIGGER = 3


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed)
    module = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(),
                           nn.Linear(32, 1))
    model = DistributedDataParallel(module)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 16, 10, generator=generator)
    targets = torch.randn(args.steps, 16, 1, generator=generator)
    log = common.TruthLog(args, "pytorch#104336", "DDP model moved and back: gradients no "
                          "longer all-reduced", TRIGGER, rank, world_size)
    for step in range(args.steps):
        if step == TRIGGER:
            model.double()  # an offload and a reload, as a checkpointing helper does
            model.float()
            if not args.bug:
                model = DistributedDataParallel(module)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        agree = common.replicas_agree(list(module.parameters()))
        log.step(step, not agree, loss=loss.item(), replicas_agree=agree,
                 digest=common.digest(module.parameters()))
    log.close()


def main():
    args = common.parser(__doc__.splitlines()[0], "the model is moved and back at step "
                         "{} and not re-wrapped".format(TRIGGER), distributed=True).parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
