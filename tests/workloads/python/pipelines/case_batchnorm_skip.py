#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: an MLP with BatchNorm1d and SGD (weight decay) behind a loss-spike guard; step K skipped.

Both twins see a hard batch (inputs scaled 10x) at step K and guard the update
against bad losses. The fixed twin skips optimizer.step() only for a loss that
is not finite; the buggy twin's guard also skips any loss above a threshold set
too tight (SPIKE), so the update of step K is silently dropped. Steps are loop
iterations here: after K the buggy twin has made one optimizer step fewer.
Truth per step: optimizer_step (whether it was called), parameters_changed, lr,
training.

    /usr/bin/python3 case_batchnorm_skip.py --bug --log /tmp/batchnorm.json
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402

SPIKE = 20.0


def main():
    args = common.parser(__doc__.splitlines()[0],
                         bug="a too tight loss-spike guard skips optimizer.step() at step K",
                         trigger=5).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)
    inputs, targets = torch.randn(args.steps, 8, 8), torch.randn(args.steps, 8, 1)
    inputs[args.trigger] *= 10
    targets[args.trigger] *= 10
    steps = []
    model.train()
    for step in range(args.steps):
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        take = math.isfinite(loss.item()) and not (args.bug and loss.item() > SPIKE)
        if take:
            optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(),
                                 optimizer_step=take))
    common.write_log(args.log, *common.case_truth(args, "optimizer.step skipped"), steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
