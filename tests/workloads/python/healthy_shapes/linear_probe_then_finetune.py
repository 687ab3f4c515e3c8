#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a linear probe, then the whole model fine-tuned by a new optimizer at a lower rate.

LP-FT (Kumar et al. 2022, "Fine-Tuning can Distort Pretrained Features"):
the pretrained backbone is frozen and a new head is trained alone (SGD
momentum, rate 0.1), then the backbone is unfrozen and a new SGD over the
backbone and the head fine-tunes both at a tenth of the rate, with fresh
momentum buffers. One process, CPU.

    /usr/bin/python3 linear_probe_then_finetune.py --steps 10 --log-dir /tmp/lpft
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--probe-steps", type=int, default=5, metavar="K",
                         help="steps of the linear probe before fine-tuning (default 5)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    backbone = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU())
    head = nn.Linear(16, 3)
    backbone.requires_grad_(False)
    optimizer = torch.optim.SGD(head.parameters(), lr=0.1, momentum=0.9)
    inputs, labels = torch.randn(args.steps, 16, 8), torch.randint(0, 3, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        if step == args.probe_steps:
            backbone.requires_grad_(True)
            optimizer = torch.optim.SGD(list(backbone.parameters()) + list(head.parameters()),
                                        lr=0.01, momentum=0.9)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(head(backbone(inputs[step])), labels[step])
        loss.backward()
        before = common.snapshot(head.parameters())
        optimizer.step()
        log.step(step, optimizer, loss.item(), common.changed(before, head.parameters()),
                 phase="probe" if step < args.probe_steps else "fine-tune")
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
