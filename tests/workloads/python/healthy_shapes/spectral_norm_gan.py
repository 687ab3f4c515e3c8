#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: SN-GAN: a discriminator under spectral_norm, hinge loss, two Adam optimizers.

Spectral normalisation as SN-GAN and BigGAN use it: each discriminator
linear's weight is recomputed at every training forward from `weight_orig`
and a power-iteration vector (`torch.nn.utils.spectral_norm`), so the
parameter the optimizer holds is `weight_orig`, and the weight the forward
reads is a new tensor each time. The discriminator steps first, then the
generator. One process, CPU.

    /usr/bin/python3 spectral_norm_gan.py --steps 10 --log-dir /tmp/sngan
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.utils import spectral_norm  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    generator = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 12))
    discriminator = nn.Sequential(spectral_norm(nn.Linear(12, 32)), nn.LeakyReLU(0.1),
                                  spectral_norm(nn.Linear(32, 1)))
    optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=4e-4, betas=(0.0, 0.9))
    optimizer_g = torch.optim.Adam(generator.parameters(), lr=1e-4, betas=(0.0, 0.9))
    real, noise = torch.randn(args.steps, 16, 12), torch.randn(args.steps, 16, 8)
    parameters = list(generator.parameters()) + list(discriminator.parameters())
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(parameters)
        optimizer_d.zero_grad()
        fake = generator(noise[step]).detach()
        loss_d = torch.relu(1 - discriminator(real[step])).mean() + \
            torch.relu(1 + discriminator(fake)).mean()
        loss_d.backward()
        optimizer_d.step()
        optimizer_g.zero_grad()
        loss_g = -discriminator(generator(noise[step])).mean()
        loss_g.backward()
        optimizer_g.step()
        log.step(step, optimizer_d, loss_d, common.changed(before, parameters),
                 loss_g=float(loss_g))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
