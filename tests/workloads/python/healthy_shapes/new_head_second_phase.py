#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: two-phase transfer learning, a new head and a new optimizer for the second phase.

Phase one trains a backbone and a 4-class head with SGD momentum; at step
--switch the head is replaced by a fresh 2-class one, and a new Adam over the
backbone and the new head trains on (the first optimizer is dropped). One
process, CPU.

    /usr/bin/python3 new_head_second_phase.py --steps 10 --log-dir /tmp/twophase
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--switch", type=int, default=5, metavar="K",
                         help="step at which the second phase starts (default 5)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    backbone = nn.Sequential(nn.Linear(10, 24), nn.ReLU(), nn.Linear(24, 24), nn.ReLU())
    head = nn.Linear(24, 4)
    optimizer = torch.optim.SGD(list(backbone.parameters()) + list(head.parameters()), lr=0.05,
                                momentum=0.9)
    inputs = torch.randn(args.steps, 16, 10)
    labels = torch.randint(0, 4, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        if step == args.switch:
            head = nn.Linear(24, 2)
            optimizer = torch.optim.Adam(list(backbone.parameters()) + list(head.parameters()),
                                         lr=1e-3)
        classes = head.out_features
        parameters = list(backbone.parameters()) + list(head.parameters())
        before = common.snapshot(parameters)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(head(backbone(inputs[step])),
                                           labels[step] % classes)
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, parameters), classes=classes)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
