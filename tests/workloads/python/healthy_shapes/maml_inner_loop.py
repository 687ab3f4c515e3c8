#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: MAML, an inner loop of functional updates inside each meta-step.

For each of two tasks a step, the inner loop takes two gradient steps on
"fast weights" computed functionally (`torch.autograd.grad` with
`create_graph=True`, `F.linear` on the adapted tensors; the module's
parameters are never changed in place there), then the query loss of the
adapted weights is summed and the meta-optimizer (Adam) steps the module's
parameters once. One process, CPU.

    /usr/bin/python3 maml_inner_loop.py --steps 10 --log-dir /tmp/maml
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import shapes_common as common  # noqa: E402

TASKS, INNER_STEPS, INNER_LR = 2, 2, 0.1


def forward(weights, x):
    h = F.relu(F.linear(x, weights[0], weights[1]))
    return F.linear(h, weights[2], weights[3])


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(1, 32), nn.ReLU(), nn.Linear(32, 1))
    meta_optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        meta_optimizer.zero_grad()
        meta_loss = 0.0
        for _ in range(TASKS):
            amplitude, phase = torch.rand(1) * 4 + 0.1, torch.rand(1) * 3
            support, query = torch.rand(10, 1) * 10 - 5, torch.rand(10, 1) * 10 - 5
            fast = list(model.parameters())
            for _ in range(INNER_STEPS):
                inner = F.mse_loss(forward(fast, support), amplitude * torch.sin(support + phase))
                grads = torch.autograd.grad(inner, fast, create_graph=True)
                fast = [w - INNER_LR * g for w, g in zip(fast, grads)]
            meta_loss = meta_loss + F.mse_loss(forward(fast, query),
                                               amplitude * torch.sin(query + phase))
        meta_loss.backward()
        meta_optimizer.step()
        log.step(step, meta_optimizer, meta_loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
