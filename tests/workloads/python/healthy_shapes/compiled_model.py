#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a model wrapped by torch.compile, AdamW.

`model = torch.compile(model)` then a usual loop. While it compiles (the
first step), torch.compile runs the model's code on fake tensors, whose
reads of the weights are no reads of the parameters. The backend is
aot_eager: torch.compile's graph capture and AOT autograd, the model's
operators decomposed (linear as addmm) and run by aten; inductor's code
generation needs a C++ compiler, which the torch roots lack. On torch 1.13
(no torch.compile) the model runs eagerly.

    /usr/bin/python3 compiled_model.py --steps 10 --log-dir /tmp/compiled
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
    model = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    compiled = hasattr(torch, "compile")
    forward = torch.compile(model, backend="aot_eager") if compiled else model
    inputs = torch.randn(args.steps, 12, 16)
    targets = torch.randn(args.steps, 12, 4)
    log = common.StepLog(args.log_dir)
    for index in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(forward(inputs[index]), targets[index])
        loss.backward()
        optimizer.step()
        log.step(index, optimizer, loss, common.changed(before, model.parameters()),
                 compiled=compiled)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
