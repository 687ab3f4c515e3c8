#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a binarised network trained through a straight-through estimator, weights clipped.

BinaryConnect / XNOR-Net style: each binary layer's forward uses the sign of
its real-valued weight (a custom autograd Function whose backward passes the
gradient straight through where |w| <= 1), the real weights are what Adam
updates, and after each step they are clipped to [-1, 1] by hand under
no_grad, outside the optimizer. Batch norm between the layers, the last
layer full precision; zero_grad() first, one process, CPU.

    /usr/bin/python3 binary_weights_ste.py --steps 10 --log-dir /tmp/binary
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


class SignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight):
        ctx.save_for_backward(weight)
        return torch.sign(weight)

    @staticmethod
    def backward(ctx, grad):
        (weight,) = ctx.saved_tensors
        return grad * (weight.abs() <= 1).to(grad.dtype)


class BinaryLinear(nn.Linear):
    def forward(self, x):
        return nn.functional.linear(x, SignSTE.apply(self.weight), self.bias)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(BinaryLinear(12, 32), nn.BatchNorm1d(32), nn.Hardtanh(),
                          BinaryLinear(32, 32), nn.BatchNorm1d(32), nn.Hardtanh(),
                          nn.Linear(32, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    inputs, labels = torch.randn(args.steps, 16, 12), torch.randint(0, 4, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        optimizer.zero_grad()
        before = common.snapshot(model.parameters())
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            for layer in model:
                if isinstance(layer, BinaryLinear):
                    layer.weight.clamp_(-1.0, 1.0)
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
