#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a 1-D convolution stack under weight normalisation (WaveNet, HiFi-GAN, DAC).

Every convolution is wrapped by `weight_norm`, as neural vocoders and audio
codecs build them: the optimizer holds each layer's direction `weight_v` and
gain `weight_g`, and every forward computes the weight the convolution reads
from them, a new tensor each time. AdamW, `clip_grad_norm_`, an
`ExponentialLR` stepped each iteration. One process, CPU.

    /usr/bin/python3 weight_norm_convs.py --steps 10 --log-dir /tmp/weightnorm
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.utils import weight_norm  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(weight_norm(nn.Conv1d(1, 8, 7, padding=3)), nn.LeakyReLU(0.1),
                          weight_norm(nn.Conv1d(8, 8, 5, padding=4, dilation=2)),
                          nn.LeakyReLU(0.1), weight_norm(nn.Conv1d(8, 1, 7, padding=3)),
                          nn.Tanh())
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-4, betas=(0.8, 0.99))
    schedule = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.999)
    signals = torch.randn(args.steps, 4, 1, 64)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        noisy = signals[step] + 0.05 * torch.randn_like(signals[step])
        loss = nn.functional.l1_loss(model(noisy), signals[step])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
