#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: an LSTM regressor with SGD; the optimizer is rebuilt from the configuration at step K.

At step K both twins rebuild the optimizer and load its state back, as a
resume does. The buggy twin's configuration holds 10x the learning rate (a unit
mix-up), which the rebuilt optimizer applies: the learning rate silently
changes. The fixed twin rebuilds it with the same learning rate. Truth per step:
lr, rebuilt, parameters_changed, training.

    /usr/bin/python3 case_lstm_lr_rebuild.py --bug --log /tmp/lstm.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402

LR = 0.01


class LSTMRegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=4, hidden_size=10, batch_first=True)
        self.out = nn.Linear(10, 2)

    def forward(self, sequences):
        outputs, _ = self.lstm(sequences)
        return self.out(outputs[:, -1])


def main():
    args = common.parser(__doc__.splitlines()[0],
                         bug="the optimizer is rebuilt with 10x the learning rate at step K",
                         trigger=5).parse_args()
    torch.manual_seed(args.seed)
    model = LSTMRegressor()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)
    sequences, targets = torch.randn(args.steps, 8, 6, 4), torch.randn(args.steps, 8, 2)
    steps = []
    model.train()
    for step in range(args.steps):
        rebuilt = step == args.trigger
        if rebuilt:
            lr = LR * 10 if args.bug else LR
            state = optimizer.state_dict()
            optimizer = torch.optim.SGD(model.parameters(), lr=lr)
            optimizer.load_state_dict(state)
            for group in optimizer.param_groups:
                group["lr"] = lr
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(sequences[step]), targets[step])
        loss.backward()
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(), rebuilt=rebuilt))
    common.write_log(args.log, *common.case_truth(args, "learning rate silently changed"), steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
