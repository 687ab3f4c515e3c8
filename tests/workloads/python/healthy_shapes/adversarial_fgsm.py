#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: adversarial training (FGSM): a backward for the input's gradient, then the real one.

Each step takes the gradient of the loss with respect to the input (a first
backward, which also fills the parameters' gradients), moves the input along
its sign, then calls `zero_grad()` and trains on the clean and the perturbed
batch with a second backward and the optimizer's step (SGD momentum), as
Goodfellow et al.'s adversarial training does.

    /usr/bin/python3 adversarial_fgsm.py --steps 10 --log-dir /tmp/fgsm
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
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 16, 10, generator=generator)
    labels = torch.randint(0, 3, (args.steps, 16), generator=generator)
    parameters = list(model.parameters())
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(parameters)
        clean = inputs[step].clone().requires_grad_(True)
        nn.functional.cross_entropy(model(clean), labels[step]).backward()
        perturbed = (clean + 0.1 * clean.grad.sign()).detach()
        optimizer.zero_grad()
        loss = 0.5 * (nn.functional.cross_entropy(model(inputs[step]), labels[step]) +
                      nn.functional.cross_entropy(model(perturbed), labels[step]))
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, parameters))
    log.close()


if __name__ == "__main__":
    sys.exit(main())
