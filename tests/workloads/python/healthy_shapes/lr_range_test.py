#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a learning-rate range test before training, its states restored.

As torch-lr-finder and fastai's `lr_find` run it: the model's and the
optimizer's state dicts are copied before any step, the first --probe-steps
steps run at learning rates growing tenfold each, then both states are loaded
back (the optimizer's momentum buffers gone again) and training starts at the
rate chosen. SGD with momentum, one process, CPU.

    /usr/bin/python3 lr_range_test.py --steps 10 --log-dir /tmp/range
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
    options.add_argument("--probe-steps", type=int, default=4, metavar="K",
                         help="steps of the range test before training (default 4)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    saved_model = copy.deepcopy(model.state_dict())
    saved_optimizer = copy.deepcopy(optimizer.state_dict())
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randn(args.steps, 16, 2)
    log = common.StepLog(args.log_dir)
    losses = []
    for step in range(args.steps):
        restored = step == args.probe_steps
        if restored:
            # The rate before the loss grew fastest, as the finders suggest.
            chosen = 1e-4 * 10 ** max(0, losses.index(min(losses)) - 1)
            model.load_state_dict(saved_model)
            optimizer.load_state_dict(saved_optimizer)
            for group in optimizer.param_groups:
                group["lr"] = chosen
        elif step < args.probe_steps:
            for group in optimizer.param_groups:
                group["lr"] = 1e-4 * 10 ** step
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        if step < args.probe_steps:
            losses.append(loss.item())
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 restored=restored)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
