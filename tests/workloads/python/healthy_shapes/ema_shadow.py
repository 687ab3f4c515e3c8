#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: Adam with an exponential moving average (EMA) of the weights kept in a frozen copy.

The shadow model is a deep copy with requires_grad_(False) (as timm's
ModelEmaV2 and most diffusion and detection code keep it); after each
optimizer step its weights move towards the trained ones under no_grad, and
every third step the shadow model is evaluated in eval(). Its weights change
every step although they do not require gradients: on purpose. One process,
CPU.

    /usr/bin/python3 ema_shadow.py --steps 10 --log-dir /tmp/ema
"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

DECAY = 0.9


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 3))
    shadow = copy.deepcopy(model).eval().requires_grad_(False)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
    inputs, labels = torch.randn(args.steps, 16, 10), torch.randint(0, 3, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            for kept, trained in zip(shadow.state_dict().values(), model.state_dict().values()):
                if kept.dtype.is_floating_point:
                    kept.mul_(DECAY).add_(trained, alpha=1 - DECAY)
                else:
                    kept.copy_(trained)
            shadow_loss = None
            if step % 3 == 2:
                shadow_loss = float(nn.functional.cross_entropy(shadow(inputs[step]),
                                                                labels[step]))
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 shadow_loss=shadow_loss)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
