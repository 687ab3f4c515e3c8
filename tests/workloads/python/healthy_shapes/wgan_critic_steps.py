#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: the original WGAN: five critic steps for each generator step, weights clipped.

As the PyTorch-GAN collection's wgan.py trains it: every batch steps the
critic (RMSprop) on real and generated samples (the generator's forward
read, its output detached) and clamps the critic's weights to
[-0.01, 0.01]; every fifth batch (--critic-steps) also steps the generator
(RMSprop) through the critic. The critic's optimizer steps several times in
a row, so the generator it reads was trained a few steps before, and in the
first steps it is not trained yet. One log line per optimizer step. One
process, CPU.

    /usr/bin/python3 wgan_critic_steps.py --steps 20 --log-dir /tmp/wgan
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

NOISE = 4
CLIP = 0.01


def main():
    options = common.parser(__doc__.splitlines()[0], steps=20)
    options.add_argument("--critic-steps", type=int, default=5, metavar="N",
                         help="critic steps for each generator step (n_critic, default 5)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    generator = nn.Sequential(nn.Linear(NOISE, 16), nn.ReLU(), nn.Linear(16, 2))
    critic = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    optimizer_g = torch.optim.RMSprop(generator.parameters(), lr=5e-4)
    optimizer_c = torch.optim.RMSprop(critic.parameters(), lr=5e-4)
    log = common.StepLog(args.log_dir)
    step, batch = 0, 0
    while step < args.steps:
        real = torch.randn(16, 2) * 0.5 + 1.0
        before = common.snapshot(critic.parameters())
        optimizer_c.zero_grad()
        fake = generator(torch.randn(16, NOISE)).detach()
        loss_c = critic(fake).mean() - critic(real).mean()
        loss_c.backward()
        optimizer_c.step()
        for parameter in critic.parameters():
            parameter.data.clamp_(-CLIP, CLIP)
        log.step(step, optimizer_c, loss_c, common.changed(before, critic.parameters()),
                 model="critic")
        step += 1
        if batch % args.critic_steps == 0 and step < args.steps:
            before = common.snapshot(generator.parameters())
            optimizer_g.zero_grad()
            loss_g = -critic(generator(torch.randn(16, NOISE))).mean()
            loss_g.backward()
            optimizer_g.step()
            log.step(step, optimizer_g, loss_g,
                     common.changed(before, generator.parameters()), model="generator")
            step += 1
        batch += 1
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
