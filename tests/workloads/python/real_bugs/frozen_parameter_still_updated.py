#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A layer frozen mid-run with requires_grad=False keeps moving (momentum, weight decay).

A common fine-tuning schedule: train everything, then freeze the encoder at
step K with `requires_grad_(False)` and keep the optimizer. With gradients
cleared to zero tensors (`zero_grad(set_to_none=False)`, torch 1.x's
default), SGD still updates the frozen weights: weight decay shrinks them and
the momentum buffer keeps pushing them, so the "frozen" encoder drifts for
the rest of the run (the kind of frozen stage mmpretrain#702's users meant to
keep fixed). The buggy twin freezes at step K (4) that way; the fixed twin
also sets the frozen weights' gradients to None, which SGD skips. Symptom per
step: a parameter with requires_grad False changed.

    /usr/bin/python3 frozen_parameter_still_updated.py --bug --log-dir /tmp/frozen-moving
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402

TRIGGER = 4


def main():
    args = common.parser(__doc__.splitlines()[0], "the frozen encoder's zeroed gradients "
                         "stay, momentum and weight decay move it").parse_args()
    torch.manual_seed(args.seed)
    encoder = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 16), nn.GELU())
    model = nn.Sequential(encoder, nn.Linear(16, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 16, 12, generator=generator)
    labels = torch.randint(0, 3, (args.steps, 16), generator=generator)
    log = common.TruthLog(args, "frozen parameter still updated", "a requires_grad=False "
                          "layer changes", TRIGGER)
    for step in range(args.steps):
        if step == TRIGGER:
            encoder.requires_grad_(False)
            if not args.bug:
                for parameter in encoder.parameters():
                    parameter.grad = None
        optimizer.zero_grad(set_to_none=False)
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        frozen = [p for p in model.parameters() if not p.requires_grad]
        before = common.snapshot(frozen)
        optimizer.step()
        moved = any(common.changed(before, frozen))
        log.step(step, moved, loss=loss.item(), frozen_parameters=len(frozen),
                 frozen_changed=moved)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
