#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: mixed precision by hand, a bfloat16 model trained through float32 master weights.

As Apex's O2 level and NVIDIA's early mixed-precision recipe do: the model's
parameters are bfloat16; a float32 copy of each ("master weights") is what
the optimizer (SGD momentum) holds. After each backward the bfloat16
gradients are copied into the masters' gradients, the optimizer steps the
masters, and their values are copied back into the model. One process, CPU.

    /usr/bin/python3 master_weights_by_hand.py --steps 10 --log-dir /tmp/master
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
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 2)).to(torch.bfloat16)
    masters = [parameter.detach().float().requires_grad_() for parameter in model.parameters()]
    optimizer = torch.optim.SGD(masters, lr=0.05, momentum=0.9)
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randn(args.steps, 16, 2)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        model.zero_grad(set_to_none=True)
        output = model(inputs[step].to(torch.bfloat16)).float()
        loss = nn.functional.mse_loss(output, targets[step])
        loss.backward()
        for master, parameter in zip(masters, model.parameters()):
            master.grad = parameter.grad.float()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        with torch.no_grad():
            for master, parameter in zip(masters, model.parameters()):
                parameter.copy_(master)
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
