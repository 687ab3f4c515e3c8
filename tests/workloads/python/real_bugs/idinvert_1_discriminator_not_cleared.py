#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""idinvert_pytorch-reproduced#1: the discriminator's optimizer steps without its zero_grad().

The encoder's training loop of an in-domain GAN inversion trained its
discriminator without `optimizer_D.zero_grad()` ("Is the optimizer_D.zero_grad()
missing before the backward() step ...?" "You're right. Sorry I forgot to add
it."), so each discriminator step used the sum of every discriminator
gradient so far, and of the gradients the encoder's loss had sent back
through the discriminator, with no error. Here an encoder and a
discriminator, each with Adam, take turns: the discriminator's step, then the
encoder's (its gradients cleared), two optimizer steps an iteration as the
tool counts steps. The buggy twin leaves out the discriminator's
`zero_grad()`; the fixed twin calls it. Symptom per step: the
discriminator's backward ran on gradients not cleared (from its second step).

    /usr/bin/python3 idinvert_1_discriminator_not_cleared.py --bug --log-dir /tmp/idinvert1
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0], "the discriminator's zero_grad() is "
                         "missing").parse_args()
    torch.manual_seed(args.seed)
    encoder = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    discriminator = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    optimizer_e = torch.optim.Adam(encoder.parameters(), lr=1e-3)
    optimizer_d = torch.optim.Adam(discriminator.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(args.seed + 1)
    iterations = (args.steps + 1) // 2
    images = torch.randn(iterations, 16, 16, generator=generator)
    codes = torch.randn(iterations, 16, 8, generator=generator)
    # The tool's steps: the discriminator's at 2i, the encoder's at 2i + 1.
    log = common.TruthLog(args, "idinvert_pytorch-reproduced#1",
                          "discriminator gradients never cleared", 2)
    for iteration in range(iterations):
        if not args.bug:
            optimizer_d.zero_grad()
        stale = any(p.grad is not None and bool(p.grad.abs().sum() > 0)
                    for p in discriminator.parameters())
        fake = encoder(images[iteration]).detach()
        loss_d = (nn.functional.softplus(discriminator(fake)).mean() +
                  nn.functional.softplus(-discriminator(codes[iteration])).mean())
        loss_d.backward()
        optimizer_d.step()
        log.step(2 * iteration, stale, loss_d=loss_d.item(), stale_gradient=stale)
        optimizer_e.zero_grad()
        encoded = encoder(images[iteration])
        loss_e = (nn.functional.softplus(-discriminator(encoded)).mean() +
                  nn.functional.mse_loss(encoded, codes[iteration]))
        loss_e.backward()
        optimizer_e.step()
        log.step(2 * iteration + 1, False, loss_e=loss_e.item())
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
