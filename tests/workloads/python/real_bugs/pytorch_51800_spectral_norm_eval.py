#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pytorch#51800: a spectral-normalised model evaluated before any training forward.

`nn.utils.spectral_norm` estimates the largest singular value by a power
iteration that runs in the forward pass in training mode only. A model
switched to `eval()` straight after it is built (to look at its
initialisation, as in the report) divides its weights by an estimate the
iteration never refined: the first evaluation is wrong, with no error. Here a
GAN-style discriminator (spectral-normalised Linear layers, Adam betas 0.5)
is evaluated at step 0 before training, then every 4 steps. The fixed twin
runs one training-mode forward (under no_grad) first, the report's fix.
Symptom per step: an evaluation in that step used a spectral-norm vector `u`
never updated by a power iteration.

    /usr/bin/python3 pytorch_51800_spectral_norm_eval.py --bug --log-dir /tmp/51800
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.utils import spectral_norm  # noqa: E402

import bug_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0], "evaluate the model before any "
                         "training-mode forward").parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(spectral_norm(nn.Linear(12, 48)), nn.LeakyReLU(0.2),
                          spectral_norm(nn.Linear(48, 48)), nn.LeakyReLU(0.2),
                          spectral_norm(nn.Linear(48, 1)))
    # A layer with one output has a one-element u, always +-1: the others show the iteration.
    normalised = [m for m in model if hasattr(m, "weight_u") and m.weight_u.numel() > 1]
    initial_u = [m.weight_u.clone() for m in normalised]
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-4, betas=(0.5, 0.999))
    generator = torch.Generator().manual_seed(args.seed + 1)
    real = torch.randn(args.steps, 16, 12, generator=generator) + 1.0
    fake = torch.randn(args.steps, 16, 12, generator=generator)
    probe = torch.randn(32, 12, generator=generator)
    log = common.TruthLog(args, "pytorch#51800", "evaluation before the power iteration ran", 0)
    if not args.bug:
        with torch.no_grad():
            model.train()(probe)
    for step in range(args.steps):
        stale = None
        if step % 4 == 0:
            model.eval()
            stale = any(torch.equal(u, m.weight_u) for u, m in zip(initial_u, normalised))
            with torch.no_grad():
                score = model(probe).mean().item()
            model.train()
        optimizer.zero_grad()
        scores = torch.cat([model(real[step]), model(fake[step])])
        labels = torch.cat([torch.ones(16, 1), torch.zeros(16, 1)])
        loss = nn.functional.binary_cross_entropy_with_logits(scores, labels)
        loss.backward()
        optimizer.step()
        log.step(step, bool(stale), loss=loss.item(), evaluated=stale is not None,
                 stale_spectral_norm=stale, eval_score=score if stale is not None else None)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
