#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: WGAN-GP: a critic trained with a gradient penalty, then the generator.

Each iteration (one log line) steps the critic on real and generated
batches plus the penalty on the gradient of its output at points between
them (torch.autograd.grad with create_graph=True: a second backward pass
through the first), then the generator through the critic. Adam for both,
each optimizer's zero_grad(). Two optimizer steps per iteration. One
process, CPU.

    /usr/bin/python3 wgan_gp.py --steps 10 --log-dir /tmp/wgan-gp
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

NOISE = 4


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    generator = nn.Sequential(nn.Linear(NOISE, 16), nn.ReLU(), nn.Linear(16, 6))
    critic = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
    optimizer_g = torch.optim.Adam(generator.parameters(), lr=1e-4, betas=(0.0, 0.9))
    optimizer_c = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.0, 0.9))
    real = torch.randn(args.steps, 16, 6)
    noise = torch.randn(args.steps, 16, NOISE)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        params = list(generator.parameters()) + list(critic.parameters())
        before = common.snapshot(params)
        optimizer_c.zero_grad()
        fake = generator(noise[step]).detach()
        alpha = torch.rand(16, 1)
        mixed = (alpha * real[step] + (1 - alpha) * fake).requires_grad_(True)
        gradients = torch.autograd.grad(critic(mixed).sum(), mixed, create_graph=True)[0]
        penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
        loss_c = critic(fake).mean() - critic(real[step]).mean() + 10 * penalty
        loss_c.backward()
        optimizer_c.step()
        optimizer_g.zero_grad()
        loss_g = -critic(generator(noise[step])).mean()
        loss_g.backward()
        optimizer_g.step()
        log.step(step, optimizer_c, loss_c, common.changed(before, params),
                 loss_g=float(loss_g), optimizer_steps=2)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
