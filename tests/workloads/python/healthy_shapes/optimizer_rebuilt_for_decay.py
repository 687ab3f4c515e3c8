#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: the learning rate decayed by building a new SGD at the decayed rate each epoch.

Older training scripts decay the rate without a scheduler and without
touching param_groups: each epoch builds its optimizer anew,
`SGD(model.parameters(), lr=base * decay ** epoch)`, so the rate halves at
every epoch boundary and the momentum buffers start afresh. No optimizer
state is loaded: it is a new optimizer by intent, not a resume. The model
is the same throughout. One process, CPU.

    /usr/bin/python3 optimizer_rebuilt_for_decay.py --steps 12 --log-dir /tmp/rebuiltdecay
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

BASE_RATE, DECAY = 0.05, 0.5


def main():
    args = common.parser(__doc__.splitlines()[0], steps=12, epochs=True).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randn(args.steps, 16, 2)
    log = common.StepLog(args.log_dir)
    optimizer = None
    for step in range(args.steps):
        epoch, offset = divmod(step, args.epoch_steps)
        if offset == 0:
            optimizer = torch.optim.SGD(model.parameters(), lr=BASE_RATE * DECAY ** epoch,
                                        momentum=0.9)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        before = common.snapshot(model.parameters())
        optimizer.step()
        log.step(step, optimizer, loss.item(), common.changed(before, model.parameters()),
                 epoch=epoch)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
