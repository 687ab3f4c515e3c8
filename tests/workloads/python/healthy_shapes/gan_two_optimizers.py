#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a GAN trained the DCGAN way, two models, two Adam optimizers, Module.zero_grad().

Each iteration steps the discriminator (real and detached fake batches),
then the generator through the discriminator, clearing gradients with
netD.zero_grad() and netG.zero_grad() as the PyTorch DCGAN example does: the
generator's backward leaves gradients on the discriminator, cleared at the
next iteration. Two optimizer steps per iteration; the log has one line per
iteration (two optimizer steps). One process, CPU.

    /usr/bin/python3 gan_two_optimizers.py --steps 10 --log-dir /tmp/gan
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

NOISE = 6


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    generator_net = nn.Sequential(nn.Linear(NOISE, 24), nn.ReLU(), nn.Linear(24, 8), nn.Tanh())
    discriminator = nn.Sequential(nn.Linear(8, 24), nn.LeakyReLU(0.2), nn.Linear(24, 1))
    optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optimizer_g = torch.optim.Adam(generator_net.parameters(), lr=2e-3, betas=(0.5, 0.999))
    real_data = torch.randn(args.steps, 16, 8) * 0.5 + 0.3
    noise = torch.randn(args.steps, 16, NOISE)
    ones, zeros = torch.ones(16, 1), torch.zeros(16, 1)
    criterion = nn.BCEWithLogitsLoss()
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(list(generator_net.parameters()) +
                                 list(discriminator.parameters()))
        discriminator.zero_grad()
        fake = generator_net(noise[step])
        loss_d = criterion(discriminator(real_data[step]), ones) + \
            criterion(discriminator(fake.detach()), zeros)
        loss_d.backward()
        optimizer_d.step()
        generator_net.zero_grad()
        loss_g = criterion(discriminator(fake), ones)
        loss_g.backward()
        optimizer_g.step()
        log.step(step, optimizer_g, loss_g, common.changed(
            before, list(generator_net.parameters()) + list(discriminator.parameters())),
            loss_d=float(loss_d), optimizer_steps=2)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
