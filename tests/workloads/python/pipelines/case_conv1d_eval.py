#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: a Conv1d net (dropout) with Adam and StepLR, validated before step K and every K steps.

Each validation pass is model.eval(), a forward under torch.no_grad() on held-out
data, then model.train(). The buggy twin forgets model.train(): from step K the
model trains in eval mode (dropout off). Truth per step: training (the mode the
step ran in), validated_before, lr, parameters_changed.

    /usr/bin/python3 case_conv1d_eval.py --bug --log /tmp/conv1d.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0],
                         bug="model.train() not called after the validation pass before step K",
                         trigger=4).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Conv1d(2, 6, 3), nn.ReLU(), nn.Dropout(0.3), nn.Conv1d(6, 4, 3),
                          nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(4, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    signals, labels = torch.randn(args.steps, 8, 2, 20), torch.randint(0, 3, (args.steps, 8))
    held_out = torch.randn(8, 2, 20)
    steps = []
    model.train()
    for step in range(args.steps):
        validated = step > 0 and step % args.trigger == 0
        if validated:
            model.eval()
            with torch.no_grad():
                model(held_out)
            if not args.bug:
                model.train()
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(signals[step]), labels[step])
        loss.backward()
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(),
                                 validated_before=validated))
        scheduler.step()
    common.write_log(args.log, *common.case_truth(args, "eval() never undone"), steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
