#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: a GRU sequence model with RMSprop; the buggy twin stops calling zero_grad() at step K.

From step K on, gradients pile up across steps. The fixed twin calls
optimizer.zero_grad() every step. Truth per step: zero_grad, lr, training,
parameters_changed.

    /usr/bin/python3 case_gru_zero_grad.py --bug --log /tmp/gru.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402


class GRURegressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(input_size=6, hidden_size=12, batch_first=True)
        self.out = nn.Linear(12, 1)

    def forward(self, sequences):
        outputs, _ = self.gru(sequences)
        return self.out(outputs[:, -1])


def main():
    args = common.parser(__doc__.splitlines()[0], bug="zero_grad() no longer called from step K",
                         trigger=5).parse_args()
    torch.manual_seed(args.seed)
    model = GRURegressor()
    optimizer = torch.optim.RMSprop(model.parameters(), lr=0.005)
    sequences, targets = torch.randn(args.steps, 8, 5, 6), torch.randn(args.steps, 8, 1)
    steps = []
    model.train()
    for step in range(args.steps):
        before = common.snapshot(model)
        zero_grad = not (args.bug and step >= args.trigger)
        if zero_grad:
            optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(sequences[step]), targets[step])
        loss.backward()
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(),
                                 zero_grad=zero_grad))
    common.write_log(args.log, *common.case_truth(args, "zero_grad missing"), steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
