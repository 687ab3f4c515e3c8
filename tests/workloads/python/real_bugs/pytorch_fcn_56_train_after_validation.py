#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pytorch-fcn#56: a validation in the middle of an epoch leaves the model in eval() until the next.

The trainer called `model.train()` at the start of each epoch and validated
every few iterations, putting the model in `eval()`; "validation can occur
before end of epoch, which sets model mode to eval. Training will have no
effect until end of the epoch" (the fix: `model.train()` after validating;
vsepp#4 had the same). Here a CNN with batch norm and dropout (SGD, momentum)
trains epochs of 7 steps and validates after step 3; the buggy twin trains
steps 4 to 6 in eval() (batch norm on its running statistics, no dropout),
the fixed twin calls `model.train()` after validating. Symptom per step: the
model was in eval() for the step's forward.

    /usr/bin/python3 pytorch_fcn_56_train_after_validation.py --bug --log-dir /tmp/fcn56
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402

EPOCH_STEPS = 7
VALIDATE_AFTER = 3


def main():
    args = common.parser(__doc__.splitlines()[0], "model.train() is not called after "
                         "validating").parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.3), nn.Linear(8, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(args.seed + 1)
    images = torch.randn(args.steps, 8, 3, 12, 12, generator=generator)
    labels = torch.randint(0, 4, (args.steps, 8), generator=generator)
    validation = torch.randn(8, 3, 12, 12, generator=generator)
    log = common.TruthLog(args, "pytorch-fcn#56", "trained in eval() after a validation",
                          VALIDATE_AFTER + 1)
    for step in range(args.steps):
        if step % EPOCH_STEPS == 0:
            model.train()
        training = model.training
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, not training, loss=loss.item(), model_training=training)
        if step % EPOCH_STEPS == VALIDATE_AFTER:
            model.eval()
            with torch.no_grad():
                model(validation)
            if not args.bug:
                model.train()
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
