#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy program: an MLP with SGD whose learning rate ReduceLROnPlateau halves when the validation loss stalls.

No bug and no twin. After every optimizer step the model is validated
(model.eval(), a forward under torch.no_grad(), model.train()) and the
scheduler is stepped with the validation loss, which this task never improves
on: ReduceLROnPlateau (patience 1) halves the learning rate every other step.
The scheduler's step() runs in the training loop's own evaluator loop, where
the tracer may not see it. Truth per step: lr, parameters_changed, training.

    /usr/bin/python3 healthy_mlp_plateau.py --log /tmp/plateau.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(5, 12), nn.Tanh(), nn.Linear(12, 12), nn.Tanh(),
                          nn.Linear(12, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=1)
    inputs, targets = torch.randn(args.steps, 16, 5), torch.randn(args.steps, 16, 1)
    held_out, held_out_targets = torch.randn(32, 5), torch.randn(32, 1)
    steps = []
    model.train()
    for step in range(args.steps):
        before = common.snapshot(model)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        record = common.fact(step, model, optimizer, before, loss=loss.item())
        model.eval()
        with torch.no_grad():
            validation = nn.functional.mse_loss(model(held_out), held_out_targets).item()
        model.train()
        # Random targets: the validation loss stalls; a worsening metric drives the schedule.
        scheduler.step(validation + step)
        record["validation_loss"] = validation
        steps.append(record)
    common.write_log(args.log, None, None, steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
