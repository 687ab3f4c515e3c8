#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: an MLP with SGD momentum that clears the gradients with the model's own zero_grad().

The loop is model.zero_grad(), forward, backward, gradient clipping,
optimizer.step(): the module's zero_grad() rather than the optimizer's, as
PyTorch's word_language_model and DCGAN examples and many older scripts
write it. One process, CPU.

    /usr/bin/python3 module_zero_grad.py --steps 10 --log-dir /tmp/module-zero-grad
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randn(args.steps, 16, 4)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        model.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
