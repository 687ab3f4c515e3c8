#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: gradual unfreezing (ULMFiT): the body frozen for 3 steps, then unfrozen; AdamW over all.

The optimizer holds every parameter from the start; the body's have
requires_grad False (no gradient, so AdamW skips them) until step 3. One
process, CPU.

    /usr/bin/python3 gradual_unfreeze.py --steps 10 --log-dir /tmp/unfreeze
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    body = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
    head = nn.Linear(32, 3)
    model = nn.Sequential(body, head)
    body.requires_grad_(False)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randint(0, 3, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        if step == 3:
            body.requires_grad_(True)
        before = common.snapshot(model.parameters())
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
