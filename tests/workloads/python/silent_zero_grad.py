#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A small CPU training loop for the silent-error suite: zero_grad missing.

Healthy by default; with --missing-zero-grad K it stops calling
optimizer.zero_grad() from step K on, so gradients accumulate across steps
and training goes on silently wrong. It writes the steps where zero_grad was
called to --log (JSON), the truth the checking test compares against.
"""
import argparse
import json
import sys

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--missing-zero-grad", type=int, default=None, metavar="K")
    parser.add_argument("--log", required=True)
    args = parser.parse_args()

    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02)
    inputs, targets = torch.randn(args.steps, 4, 8), torch.randn(args.steps, 4, 1)
    zero_grad_steps = []
    model.train()
    for step in range(args.steps):
        if args.missing_zero_grad is None or step < args.missing_zero_grad:
            optimizer.zero_grad()
            zero_grad_steps.append(step)
        loss = torch.nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
    with open(args.log, "w") as log:
        json.dump({"steps": args.steps, "zero_grad_steps": zero_grad_steps}, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
