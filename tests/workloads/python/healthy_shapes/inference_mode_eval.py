#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: evaluation under torch.inference_mode() inside the training loop.

An MLP with dropout and batch norm trained by Adam; every --eval-every steps,
after the step, the model is put in eval() and evaluated on a held-out batch
under `torch.inference_mode()` (what PyTorch recommends over `no_grad()` for
inference since 1.9), then put back in train(). With --autocast the training
forward runs under CPU bfloat16 autocast and the evaluation in float32. One
process, CPU.

    /usr/bin/python3 inference_mode_eval.py --steps 10 --log-dir /tmp/inference
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--eval-every", type=int, default=3, metavar="K",
                         help="evaluate after every K-th step (default 3)")
    options.add_argument("--autocast", action="store_true",
                         help="train under CPU bfloat16 autocast")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(32, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    inputs, labels = torch.randn(args.steps, 24, 10), torch.randint(0, 3, (args.steps, 24))
    held_in, held_labels = torch.randn(32, 10), torch.randint(0, 3, (32,))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast):
            loss = nn.functional.cross_entropy(model(inputs[step]).float(), labels[step])
        loss.backward()
        optimizer.step()
        accuracy = None
        if (step + 1) % args.eval_every == 0:
            model.eval()
            with torch.inference_mode():
                predicted = model(held_in).argmax(dim=1)
                accuracy = (predicted == held_labels).float().mean().item()
            model.train()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 accuracy=accuracy)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
