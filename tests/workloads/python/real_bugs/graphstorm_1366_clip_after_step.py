#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""graphstorm#1366: clip_grad_norm_ called after optimizer.step(): the update used unclipped gradients.

Every GraphStorm trainer clipped the gradients after `optimizer.step()`, so
`--max-grad-norm` silently did nothing: the step had already consumed the
gradients, and the next iteration cleared them (fixed by moving the clipping
between `backward()` and `step()`; VGRNN#4 and onsets-and-frames#24 had the
same). Here an MLP with Adam on large targets, clipped at 0.1: the buggy twin
clips after the step, the fixed twin before it. Symptom per step: the norm
of the gradients the step used was over the clipping threshold.

    /usr/bin/python3 graphstorm_1366_clip_after_step.py --bug --log-dir /tmp/graphstorm1366
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402

MAX_NORM = 0.1


def gradient_norm(parameters):
    return float(torch.norm(torch.stack([p.grad.norm() for p in parameters])))


def main():
    args = common.parser(__doc__.splitlines()[0], "gradients clipped after the "
                         "step").parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 32, 16, generator=generator) * 10
    targets = torch.randn(args.steps, 32, 4, generator=generator) * 10
    log = common.TruthLog(args, "graphstorm#1366", "clipping after the step", 0)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        if not args.bug:
            nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
        used = gradient_norm(list(model.parameters()))
        optimizer.step()
        if args.bug:
            nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
        unclipped = used > MAX_NORM * 1.01
        log.step(step, unclipped, loss=loss.item(), gradient_norm_used=used)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
