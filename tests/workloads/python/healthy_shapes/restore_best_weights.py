#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: the best weights restored when validation worsens, the learning rate halved.

A CNN trained by SGD with momentum keeps a copy of its state_dict() from the
step with the lowest validation loss (evaluated after every step in eval()
under no_grad()). When the validation loss has not improved for --patience
steps, the model is rolled back with `load_state_dict()` to the best copy
and the learning rate is halved by hand, and training goes on with the same
optimizer (Keras's ReduceLROnPlateau with restore_best_weights, done by
hand). The training data is noisy enough for that to happen. One process,
CPU.

    /usr/bin/python3 restore_best_weights.py --steps 10 --log-dir /tmp/restore
"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--patience", type=int, default=2, metavar="K",
                         help="steps without improvement before a roll-back (default 2)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Conv2d(1, 6, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(6 * 5 * 5, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    images, labels = torch.randn(args.steps, 16, 1, 12, 12), torch.randint(0, 4, (args.steps, 16))
    held_images, held_labels = torch.randn(32, 1, 12, 12), torch.randint(0, 4, (32,))
    best_loss, best_state, waited = float("inf"), None, 0
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        model.train()
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images[step]), labels[step])
        loss.backward()
        optimizer.step()
        changed = common.changed(before, model.parameters())
        model.eval()
        with torch.no_grad():
            validation = nn.functional.cross_entropy(model(held_images), held_labels).item()
        rolled_back = False
        if validation < best_loss:
            best_loss, best_state, waited = validation, copy.deepcopy(model.state_dict()), 0
        else:
            waited += 1
            if waited >= args.patience:
                model.load_state_dict(best_state)
                for group in optimizer.param_groups:
                    group["lr"] /= 2
                waited, rolled_back = 0, True
        log.step(step, optimizer, loss, changed, validation=validation, rolled_back=rolled_back)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
