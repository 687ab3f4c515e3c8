#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: stochastic weight averaging: an AveragedModel updated after each step from step 4.

torch.optim.swa_utils as its tutorial uses it: SGD with momentum, an
AveragedModel of the model (a deep copy, in training mode, its parameters
requiring grad) updated with the running average after each step from step
4, SWALR annealing the learning rate, and the averaged model evaluated
under torch.no_grad() after each update. One process, CPU.

    /usr/bin/python3 swa_average.py --steps 10 --log-dir /tmp/swa
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.optim.swa_utils import SWALR, AveragedModel  # noqa: E402

import shapes_common as common  # noqa: E402

SWA_START = 4


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    swa_model = AveragedModel(model)
    swa_scheduler = SWALR(optimizer, swa_lr=0.02, anneal_epochs=2)
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randn(args.steps, 16, 4)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        if step >= SWA_START:
            swa_model.update_parameters(model)
            swa_scheduler.step()
            with torch.no_grad():
                swa_model(inputs[step])
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
