#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: the backbone's learning rate held at 0 while a new head warms up, then released.

A common fine-tuning recipe: one optimizer over two parameter groups, the
pretrained backbone's and the new head's, with a LambdaLR whose backbone
factor is 0 for the first 4 steps and 1 after. The backbone requires grad
and gets gradients throughout, and AdamW holds it, but its updates are
scaled by a rate of 0 until step 4: it does not change, by choice. One
process, CPU.

    /usr/bin/python3 backbone_zero_lr_warmup.py --steps 10 --log-dir /tmp/zero-lr-warmup
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

HEAD_ONLY_STEPS = 4


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    backbone = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
    head = nn.Linear(32, 3)
    optimizer = torch.optim.AdamW([
        {"params": backbone.parameters(), "lr": 1e-3},
        {"params": head.parameters(), "lr": 1e-2},
    ], weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, [lambda step: 0.0 if step < HEAD_ONLY_STEPS else 1.0, lambda step: 1.0])
    inputs, labels = torch.randn(args.steps, 16, 12), torch.randint(0, 3, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(backbone.parameters())
        head_before = common.snapshot(head.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(head(backbone(inputs[step])), labels[step])
        loss.backward()
        optimizer.step()
        scheduler.step()
        backbone_changed = common.changed(before, backbone.parameters())
        log.step(step, optimizer, loss,
                 backbone_changed or common.changed(head_before, head.parameters()),
                 backbone_changed=backbone_changed, backbone_rate=optimizer.param_groups[0]["lr"])
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
