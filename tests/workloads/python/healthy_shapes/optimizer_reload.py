#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: training resumed from a checkpoint with a re-created model and optimizer.

At step --reload the program saves the model's and the optimizer's state
dicts (to memory, as torch.save would to a file), builds a new model and a new
Adam optimizer, loads both states and trains on with them. One process, CPU.

    /usr/bin/python3 optimizer_reload.py --steps 10 --log-dir /tmp/reload
"""
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def build():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--reload", type=int, default=5, metavar="K",
                         help="step before which the checkpoint is reloaded (default 5)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model, optimizer = build()
    inputs, targets = torch.randn(args.steps, 16, 8), torch.randn(args.steps, 16, 2)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        reloaded = step == args.reload
        if reloaded:
            checkpoint = io.BytesIO()
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                       checkpoint)
            checkpoint.seek(0)
            state = torch.load(checkpoint)
            model, optimizer = build()
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 reloaded=reloaded)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
