#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: an orthogonal recurrent weight kept so by torch.nn.utils.parametrize.

An Elman-style recurrence over 6 time steps whose hidden-to-hidden Linear
is registered with torch.nn.utils.parametrizations.orthogonal: the module's
weight is computed from `parametrizations.weight.original` at every access
(a new tensor autograd computes, read at each time step), and the optimizer
holds the original, not the weight. An input Linear and a head around it;
Adam, gradient-norm clipping, zero_grad(set_to_none=True) after the step,
an evaluation in eval() under no_grad every fourth step with the
parametrisation cached (parametrize.cached()), one process, CPU.

    /usr/bin/python3 parametrize_orthogonal.py --steps 10 --log-dir /tmp/ortho
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.utils import parametrizations, parametrize  # noqa: E402

import shapes_common as common  # noqa: E402

TIME_STEPS, WIDTH = 6, 8


class OrthogonalRecurrence(nn.Module):
    def __init__(self):
        super().__init__()
        self.input = nn.Linear(3, WIDTH)
        self.hidden = parametrizations.orthogonal(nn.Linear(WIDTH, WIDTH, bias=False))
        self.head = nn.Linear(WIDTH, 2)

    def forward(self, sequence):
        state = torch.zeros(sequence.shape[0], WIDTH)
        for t in range(sequence.shape[1]):
            state = torch.tanh(self.input(sequence[:, t]) + self.hidden(state))
        return self.head(state)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = OrthogonalRecurrence()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(args.steps, 5, TIME_STEPS, 3), torch.randn(args.steps, 5, 2)
    held_out = torch.randn(5, TIME_STEPS, 3)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
        if step % 4 == 3:
            model.eval()
            with torch.no_grad(), parametrize.cached():
                model(held_out)
            model.train()
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
