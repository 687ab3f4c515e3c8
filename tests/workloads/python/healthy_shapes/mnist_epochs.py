#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: PyTorch's MNIST example in small: a CNN with dropout, Adadelta, StepLR per epoch.

As pytorch/examples' mnist/main.py writes it: train() puts the model in
train() and runs an epoch of batches (zero_grad, forward, nll_loss,
backward, step); test() puts it in eval() and evaluates under no_grad();
the scheduler steps once an epoch. Here an epoch is --epoch-steps
batches (5) of random 12x12 images. One process, CPU.

    /usr/bin/python3 mnist_epochs.py --steps 10 --log-dir /tmp/mnist
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import shapes_common as common  # noqa: E402


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(16 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.dropout1(x)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        x = self.fc2(self.dropout2(x))
        return F.log_softmax(x, dim=1)


def train(model, optimizer, batches, log, first_step):
    model.train()
    for offset, (data, target) in enumerate(batches):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        log.step(first_step + offset, optimizer, loss,
                 common.changed(before, model.parameters()))


def test(model, data, target):
    model.eval()
    with torch.no_grad():
        return float(F.nll_loss(model(data), target, reduction="sum"))


def main():
    args = common.parser(__doc__.splitlines()[0], epochs=True).parse_args()
    torch.manual_seed(args.seed)
    model = Net()
    optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    images, labels = torch.randn(args.steps, 16, 1, 12, 12), torch.randint(0, 10, (args.steps, 16))
    held_out = torch.randn(32, 1, 12, 12), torch.randint(0, 10, (32,))
    log = common.StepLog(args.log_dir)
    step = 0
    while step < args.steps:
        epoch = range(step, min(step + args.epoch_steps, args.steps))
        train(model, optimizer, [(images[k], labels[k]) for k in epoch], log, step)
        test(model, *held_out)
        scheduler.step()
        step = epoch.stop
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
