#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""nni#4521: a pruned model's layers are replaced after its optimizer was built; they never train.

NNI's `ModelSpeedup` replaces each pruned layer with a smaller one and copies
the kept weights into it. The optimizer built before still holds the old
layers' parameters, so fine-tuning the sped-up model updates nothing it
computes with, with no error ("The parameters are not updated when the
pruned model is finetuned"; the answer: make a new optimizer). Here an MLP
(SGD, momentum 0.9) trains 3 steps, then half of the hidden units are pruned:
both linear layers are replaced by smaller ones holding the kept weights. The
buggy twin trains on with the old optimizer; the fixed twin builds a new SGD
over the new layers (its first step builds new momentum buffers). Symptom per
step: a parameter the forward used was not changed by the step.

    /usr/bin/python3 nni_4521_pruned_layers_replaced.py --bug --log-dir /tmp/nni4521
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402

TRIGGER = 3


def speed_up(model):
    """Replaces both linear layers by ones over every other hidden unit, weights kept."""
    kept = torch.arange(0, model[0].out_features, 2)
    first = nn.Linear(model[0].in_features, len(kept))
    second = nn.Linear(len(kept), model[2].out_features)
    with torch.no_grad():
        first.weight.copy_(model[0].weight[kept])
        first.bias.copy_(model[0].bias[kept])
        second.weight.copy_(model[2].weight[:, kept])
        second.bias.copy_(model[2].bias)
    model[0], model[2] = first, second


def main():
    args = common.parser(__doc__.splitlines()[0], "the optimizer built before the speed-up is "
                         "kept").parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 32, 16, generator=generator)
    targets = torch.randn(args.steps, 32, 4, generator=generator)
    log = common.TruthLog(args, "nni#4521", "pruned layers outside the optimizer", TRIGGER)
    for step in range(args.steps):
        if step == TRIGGER:
            speed_up(model)
            if not args.bug:
                optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        used = list(model.parameters())
        before = common.snapshot(used)
        optimizer.step()
        unchanged = not all(common.changed(before, used))
        log.step(step, unchanged, loss=loss.item(), used_parameter_unchanged=unchanged)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
