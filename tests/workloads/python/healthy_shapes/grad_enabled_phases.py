#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: the transfer-learning tutorial's loop, phases under torch.set_grad_enabled().

PyTorch's "Transfer Learning for Computer Vision" loop: each epoch runs a
train phase and a val phase through the same code, `model.train()` or
`model.eval()`, the forward under `torch.set_grad_enabled(phase == "train")`,
backward and SGD momentum step in the train phase only; StepLR after each
epoch; the best weights kept with `copy.deepcopy(model.state_dict())` and
loaded back at the end. --steps counts the train phase's batches. One
process, CPU.

    /usr/bin/python3 grad_enabled_phases.py --steps 10 --log-dir /tmp/phases
"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0], epochs=True).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    schedule = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    images = {"train": torch.randn(args.steps, 6, 3, 10, 10), "val": torch.randn(3, 6, 3, 10, 10)}
    labels = {"train": torch.randint(0, 2, (args.steps, 6)), "val": torch.randint(0, 2, (3, 6))}
    best_accuracy, best_weights = -1.0, copy.deepcopy(model.state_dict())
    log = common.StepLog(args.log_dir)
    step = 0
    while step < args.steps:
        for phase in ("train", "val"):
            model.train() if phase == "train" else model.eval()
            batches = range(step, min(step + args.epoch_steps, args.steps)) \
                if phase == "train" else range(3)
            correct = 0
            for batch in batches:
                before = common.snapshot(model.parameters())
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == "train"):
                    outputs = model(images[phase][batch])
                    loss = nn.functional.cross_entropy(outputs, labels[phase][batch])
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                correct += int((outputs.argmax(1) == labels[phase][batch]).sum())
                if phase == "train":
                    log.step(step, optimizer, loss, common.changed(before, model.parameters()))
                    step += 1
            if phase == "train":
                schedule.step()
            elif correct / 18 > best_accuracy:
                best_accuracy, best_weights = correct / 18, copy.deepcopy(model.state_dict())
    model.load_state_dict(best_weights)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
