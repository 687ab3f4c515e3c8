#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: AdamW with foreach=True (or fused=True) and an evaluation pass inside each step.

Each step: forward and backward on the training batch, optimizer.step(),
then model.eval(), a forward of a validation batch under torch.no_grad(),
model.train(), and optimizer.zero_grad(set_to_none=True) at the end. The
model has dropout, so eval() matters. --fused asks for AdamW's fused
implementation, which torch runs on CPU from 2.4; on an older torch the
program says so and uses foreach (its log names the implementation used).
One process, CPU.

    /usr/bin/python3 adamw_foreach_eval.py --steps 10 --log-dir /tmp/foreach
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def fused_on_cpu():
    major, minor = (int(part) for part in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 4)


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--fused", action="store_true", help="AdamW(fused=True) where it runs")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 3))
    implementation = "fused" if args.fused and fused_on_cpu() else "foreach"
    if args.fused and implementation != "fused":
        print("torch {}: no fused AdamW on CPU, foreach instead".format(torch.__version__),
              file=sys.stderr)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.003, weight_decay=0.01,
                                  **{implementation: True})
    inputs, labels = torch.randn(args.steps, 16, 12), torch.randint(0, 3, (args.steps, 16))
    validation, validation_labels = torch.randn(32, 12), torch.randint(0, 3, (32,))
    log = common.StepLog(args.log_dir)
    model.train()
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            validation_loss = nn.functional.cross_entropy(model(validation), validation_labels)
        model.train()
        optimizer.zero_grad(set_to_none=True)
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 validation_loss=float(validation_loss), implementation=implementation)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
