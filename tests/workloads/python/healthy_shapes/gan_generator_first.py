#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a GAN that steps the generator first, then the discriminator (optimizer zero_grad).

The loop of the PyTorch-GAN collection's scripts: the generator's
optimizer zeroes, the generator makes a batch, the discriminator judges it
and the generator steps; then the discriminator's optimizer zeroes, judges
real data and the detached batch, and steps. The generator's backward
leaves gradients on the discriminator, cleared by its zero_grad() before its
own backward. Two optimizer steps per iteration; the log has one line per
iteration. One process, CPU.

    /usr/bin/python3 gan_generator_first.py --steps 10 --log-dir /tmp/gan-generator-first
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
    generator = nn.Sequential(nn.Linear(NOISE, 32), nn.ReLU(), nn.Linear(32, 8))
    discriminator = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    optimizer_g = torch.optim.Adam(generator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real_data = torch.randn(args.steps, 16, 8)
    noise = torch.randn(args.steps, 16, NOISE)
    valid, fake_label = torch.ones(16, 1), torch.zeros(16, 1)
    loss_fn = nn.BCEWithLogitsLoss()
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        params = list(generator.parameters()) + list(discriminator.parameters())
        before = common.snapshot(params)
        optimizer_g.zero_grad()
        generated = generator(noise[step])
        loss_g = loss_fn(discriminator(generated), valid)
        loss_g.backward()
        optimizer_g.step()
        optimizer_d.zero_grad()
        loss_d = (loss_fn(discriminator(real_data[step]), valid) +
                  loss_fn(discriminator(generated.detach()), fake_label)) / 2
        loss_d.backward()
        optimizer_d.step()
        log.step(step, optimizer_d, loss_d, common.changed(before, params),
                 loss_g=float(loss_g), optimizer_steps=2)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
