#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a step decay of the learning rate written by hand, as PyTorch's ImageNet example had it.

`adjust_learning_rate(optimizer, epoch)` sets every param group's learning
rate to `lr * 0.1 ** (epoch // K)` at the start of each epoch, with no
scheduler object: after steady epochs the learning rate drops tenfold, on
purpose. SGD with momentum and weight decay, epochs of `--epoch-steps`
batches (3), evaluation under no_grad at the end of each epoch. One
process, CPU.

    /usr/bin/python3 step_decay_by_hand.py --steps 10 --log-dir /tmp/stepdecay
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

LR, DECAY_EPOCHS = 0.05, 2


def adjust_learning_rate(optimizer, epoch):
    """Sets the learning rate to the initial LR decayed by 10 every DECAY_EPOCHS epochs."""
    lr = LR * (0.1 ** (epoch // DECAY_EPOCHS))
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--epoch-steps", type=int, default=3, metavar="N",
                         help="batches per epoch (default 3)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9, weight_decay=1e-4)
    inputs, labels = torch.randn(args.steps, 16, 10), torch.randint(0, 4, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        epoch, batch = divmod(step, args.epoch_steps)
        if batch == 0:
            adjust_learning_rate(optimizer, epoch)
        model.train()
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        evaluation = None
        if batch == args.epoch_steps - 1:
            model.eval()
            with torch.no_grad():
                evaluation = float(nn.functional.cross_entropy(model(inputs[step]),
                                                               labels[step]))
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 epoch=epoch, evaluation=evaluation)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
