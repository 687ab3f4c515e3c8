#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: the Lookahead optimizer written out around Adam, slow weights pulled in every k steps.

Adam (the fast optimizer) steps every iteration; every --sync (3) steps the
slow weights move toward the fast ones by alpha (0.5) and the fast weights
are set to them by hand under no_grad (`copy_`), outside any optimizer step,
as Lookahead (Zhang et al.) and its common wrappers do. An MLP, zero_grad()
first, one process, CPU.

    /usr/bin/python3 lookahead_by_hand.py --steps 10 --log-dir /tmp/lookahead
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

ALPHA = 0.5


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--sync", type=int, default=3, metavar="K",
                         help="steps between slow-weight syncs (default 3)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(12, 24), nn.GELU(), nn.Linear(24, 3))
    fast = torch.optim.Adam(model.parameters(), lr=3e-3)
    slow = [parameter.detach().clone() for parameter in model.parameters()]
    inputs, labels = torch.randn(args.steps, 16, 12), torch.randint(0, 3, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        fast.zero_grad()
        before = common.snapshot(model.parameters())
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        fast.step()
        synced = (step + 1) % args.sync == 0
        if synced:
            with torch.no_grad():
                for slow_weight, parameter in zip(slow, model.parameters()):
                    slow_weight.add_(parameter - slow_weight, alpha=ALPHA)
                    parameter.copy_(slow_weight)
        log.step(step, fast, loss, common.changed(before, model.parameters()), synced=synced)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
