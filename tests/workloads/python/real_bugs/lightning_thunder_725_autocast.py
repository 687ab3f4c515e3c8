#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""lightning-thunder#725 (simulated): a linear layer left out of the autocast region.

A change in lightning-thunder applied the autocast transformation only to
torch symbols, so its own `linear` primitive ran in full precision inside an
autocast region: mixed-precision training silently lost its lower-precision
matrix products (speed, memory) while every loss looked right. Without
thunder, the effect is simulated on CPU autocast (bfloat16): in the buggy
twin the model's projection is computed by a helper that, like the
untransformed primitive, runs with autocast disabled on float32 inputs; the
fixed twin calls the layer inside the region. Symptom per step: a linear
output of the autocast forward is float32, not bfloat16.

    /usr/bin/python3 lightning_thunder_725_autocast.py --bug --log-dir /tmp/thunder725
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402


def primitive_linear(layer, x):
    """The linear primitive as the regression left it: outside the autocast transformation."""
    with torch.autocast("cpu", enabled=False):
        return nn.functional.linear(x.float(), layer.weight, layer.bias)


class Net(nn.Module):
    def __init__(self, buggy):
        super().__init__()
        self.up, self.down, self.buggy = nn.Linear(10, 40), nn.Linear(40, 3), buggy
        self.dtypes = []

    def forward(self, x):
        hidden = primitive_linear(self.up, x) if self.buggy else self.up(x)
        self.dtypes = [hidden.dtype]
        out = self.down(torch.relu(hidden))
        self.dtypes.append(out.dtype)
        return out


def main():
    args = common.parser(__doc__.splitlines()[0], "a linear runs outside autocast").parse_args()
    torch.manual_seed(args.seed)
    model = Net(args.bug)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 16, 10, generator=generator)
    labels = torch.randint(0, 3, (args.steps, 16), generator=generator)
    log = common.TruthLog(args, "lightning-thunder#725", "linear not autocast", 0)
    for step in range(args.steps):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(inputs[step])
        loss = nn.functional.cross_entropy(logits.float(), labels[step])
        loss.backward()
        optimizer.step()
        full = [str(dtype) for dtype in model.dtypes]
        log.step(step, "torch.float32" in full, loss=loss.item(), linear_output_dtypes=full)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
