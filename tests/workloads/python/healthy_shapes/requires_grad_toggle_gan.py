#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a GAN whose discriminator is frozen by requires_grad while the generator steps.

CycleGAN and pix2pix's `set_requires_grad(netD, False)` before the
generator's update and `True` again before the discriminator's: the
discriminator's parameters stop requiring gradients for part of every
iteration, and change in the other part. Two Adam optimizers, the
generator's step first. One process, CPU.

    /usr/bin/python3 requires_grad_toggle_gan.py --steps 10 --log-dir /tmp/toggle
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def set_requires_grad(model, requires_grad):
    for parameter in model.parameters():
        parameter.requires_grad = requires_grad


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    generator = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Linear(32, 10), nn.Tanh())
    discriminator = nn.Sequential(nn.Linear(10, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    optimizer_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real, noise = torch.randn(args.steps, 16, 10), torch.randn(args.steps, 16, 6)
    ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)
    criterion = nn.BCEWithLogitsLoss()
    parameters = list(generator.parameters()) + list(discriminator.parameters())
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(parameters)
        fake = generator(noise[step])
        set_requires_grad(discriminator, False)
        optimizer_g.zero_grad()
        loss_g = criterion(discriminator(fake), ones)
        loss_g.backward()
        optimizer_g.step()
        set_requires_grad(discriminator, True)
        optimizer_d.zero_grad()
        loss_d = 0.5 * (criterion(discriminator(real[step]), ones) +
                        criterion(discriminator(fake.detach()), zeros))
        loss_d.backward()
        optimizer_d.step()
        log.step(step, optimizer_g, loss_g, common.changed(before, parameters),
                 loss_d=float(loss_d))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
