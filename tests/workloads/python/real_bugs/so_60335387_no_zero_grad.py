#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Stack Overflow 60335387: an MNIST-style loop that never calls optimizer.zero_grad().

"PyTorch MNIST example not converge": the loop computed the loss, called
backward() and step(), and never cleared the gradients, so each step applied
the sum of every gradient so far; with a small learning rate it still seemed
to learn. Here a LeNet-like CNN with Adam (lr 1e-3) trains on random 14x14
images; the buggy twin leaves out `optimizer.zero_grad()`, the fixed twin
calls it at the top of each step. Symptom per step: the step's backward ran
on gradients zero_grad() had not cleared (from step 0: the loop never clears;
from step 1 the gradients hold earlier batches' too, `stale_gradient`).

    /usr/bin/python3 so_60335387_no_zero_grad.py --bug --log-dir /tmp/so60335387
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0], "zero_grad() is never called").parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Conv2d(1, 6, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(6 * 6 * 6, 32), nn.ReLU(), nn.Linear(32, 10))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(args.seed + 1)
    images = torch.randn(args.steps, 16, 1, 14, 14, generator=generator)
    labels = torch.randint(0, 10, (args.steps, 16), generator=generator)
    log = common.TruthLog(args, "Stack Overflow 60335387", "zero_grad() missing", 0)
    for step in range(args.steps):
        if not args.bug:
            optimizer.zero_grad()
        stale = any(p.grad is not None and bool(p.grad.abs().sum() > 0)
                    for p in model.parameters())
        loss = nn.functional.cross_entropy(model(images[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, args.bug, loss=loss.item(), zero_grad_called=not args.bug,
                 stale_gradient=stale)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
