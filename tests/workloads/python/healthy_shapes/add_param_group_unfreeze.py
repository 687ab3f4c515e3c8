#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a frozen body unfrozen mid-run and handed to the optimizer by add_param_group.

The body's parameters start with requires_grad=False and outside the
optimizer (SGD momentum over the head only); at step --unfreeze they get
requires_grad back and join the optimizer as a second parameter group with a
tenth of the head's learning rate, as fine-tuning recipes (fastai, timm) do.
One process, CPU.

    /usr/bin/python3 add_param_group_unfreeze.py --steps 10 --log-dir /tmp/unfreeze
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--unfreeze", type=int, default=4, metavar="K",
                         help="step at which the body joins the optimizer (default 4)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    body = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU())
    head = nn.Linear(16, 3)
    body.requires_grad_(False)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)
    inputs = torch.randn(args.steps, 16, 8)
    labels = torch.randint(0, 3, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        if step == args.unfreeze:
            body.requires_grad_(True)
            optimizer.add_param_group({"params": body.parameters(), "lr": 0.005})
        trained = [p for p in list(body.parameters()) + list(head.parameters())
                   if p.requires_grad]
        before = common.snapshot(trained)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(head(body(inputs[step])), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, trained),
                 groups=len(optimizer.param_groups))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
