#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: fine-tuning with the whole model kept in eval() (dropout off, batch norm frozen).

RL fine-tuning of language models (PPO/RLHF code) and small-batch
fine-tuning of detectors switch the model to `eval()` once and train in it:
dropout stays off and batch norm uses and keeps its running statistics,
while the gradients and Adam's steps are as usual. One process, CPU.

    /usr/bin/python3 finetune_in_eval_mode.py --steps 10 --log-dir /tmp/evalft
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
    model = nn.Sequential(nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.3),
                          nn.Linear(32, 3))
    model.eval()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    inputs = torch.randn(args.steps, 12, 10)
    labels = torch.randint(0, 3, (args.steps, 12))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 training_mode=model.training)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
