#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: the same MLP under one of torch's less common optimizers.

--optimizer picks Adagrad, Adamax, NAdam, ASGD, Rprop, SGD with Nesterov
momentum and dampening 0, or Adam with amsgrad: each runs other operators in
its step than SGD and Adam (Adagrad no mul_, Rprop signs and clamps, ASGD an
average). zero_grad() before the forward; one process, CPU.

    /usr/bin/python3 other_optimizers.py --optimizer Rprop --steps 10 --log-dir /tmp/rprop
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

OPTIMIZERS = {
    "Adagrad": lambda params: torch.optim.Adagrad(params, lr=0.05),
    "Adamax": lambda params: torch.optim.Adamax(params, lr=0.01),
    "NAdam": lambda params: torch.optim.NAdam(params, lr=0.01),
    "ASGD": lambda params: torch.optim.ASGD(params, lr=0.05, t0=3),
    "Rprop": lambda params: torch.optim.Rprop(params, lr=0.01),
    "Nesterov": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True),
    "AMSGrad": lambda params: torch.optim.Adam(params, lr=0.01, amsgrad=True),
}


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="Rprop",
                         help="which optimizer trains the model (default Rprop)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 24), nn.Tanh(), nn.Linear(24, 3))
    optimizer = OPTIMIZERS[args.optimizer](model.parameters())
    inputs = torch.randn(args.steps, 16, 10)
    labels = torch.randint(0, 3, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 algorithm=args.optimizer)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
