#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: torch's own GradScaler under CPU autocast, with steps skipped on overflow.

Mixed-precision training as the AMP recipe writes it: the forward under
torch.autocast, scaler.scale(loss).backward(), scaler.unscale_() before
clip_grad_norm_, scaler.step(optimizer), scaler.update(). The first scale
(2**127) overflows float32 gradients on purpose, so the first iterations
skip their optimizer step and back the scale off, as GradScaler does. On
torch < 2.3, which has no GradScaler for the CPU, the program is the same
with the scaler disabled (torch.cuda.amp.GradScaler(enabled=False): a
pass-through, as AMP code run on a machine without CUDA gets), and nothing
is skipped. The log has one line per optimizer step taken. One process, CPU.

    /usr/bin/python3 grad_scaler_autocast.py --steps 10 --log-dir /tmp/grad-scaler
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def make_scaler():
    """torch.amp.GradScaler("cpu") where torch has it, else the disabled CUDA one."""
    version = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
    if version >= (2, 3):
        return torch.amp.GradScaler("cpu", init_scale=2.0 ** 127, backoff_factor=2.0 ** -40,
                                    growth_interval=1000)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "CUDA is not available. Disabling"
        return torch.cuda.amp.GradScaler(enabled=False)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(12, 32), nn.GELU(), nn.Linear(32, 32), nn.GELU(),
                          nn.Linear(32, 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    scaler = make_scaler()
    inputs, labels = torch.randn(args.steps + 8, 16, 12), torch.randint(0, 4, (args.steps + 8, 16))
    log = common.StepLog(args.log_dir)
    step = iteration = 0
    while step < args.steps:
        before = common.snapshot(model.parameters())
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(inputs[iteration]), labels[iteration],
                                               reduction="sum")
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scale = scaler.get_scale()
        scaler.step(optimizer)
        scaler.update()
        iteration += 1
        if scaler.is_enabled() and scaler.get_scale() < scale:
            continue  # the step was skipped: its gradients were not finite
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 iteration=iteration, scale=scale)
        step += 1
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
