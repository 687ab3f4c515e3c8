#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""transformers#33844: attention dropout still applied in eval() (M2M100 FlashAttention2).

The attention module passed its configured dropout rate to the attention
kernel whatever `self.training` said, so evaluation and inference ran with
dropout: outputs vary from call to call and are degraded, with no error.
Here a small encoder (self-attention written out, `F.dropout` on the
attention weights, p 0.3) is trained with AdamW and evaluated after every
3rd step (steps 2, 5, ...). The buggy twin calls
`F.dropout(weights, p, training=True)`; the fixed twin passes
`training=self.training`. Symptom per step: two evaluation forwards of the
same batch in that step gave different outputs.

    /usr/bin/python3 transformers_33844_dropout_in_eval.py --bug --log-dir /tmp/tf33844
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402

EVAL_EVERY = 3


class Attention(nn.Module):
    def __init__(self, width, dropout, buggy):
        super().__init__()
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.dropout, self.buggy, self.scale = dropout, buggy, width ** -0.5

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        weights = torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1)
        weights = nn.functional.dropout(weights, self.dropout,
                                        training=True if self.buggy else self.training)
        return self.proj(weights @ v)


def main():
    args = common.parser(__doc__.splitlines()[0], "the attention dropout ignores "
                         "self.training").parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(6, 16), Attention(16, 0.3, args.bug), nn.LayerNorm(16),
                          nn.Linear(16, 2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 8, 5, 6, generator=generator)
    targets = torch.randn(args.steps, 8, 5, 2, generator=generator)
    log = common.TruthLog(args, "transformers#33844", "dropout active in eval()", EVAL_EVERY - 1)
    for step in range(args.steps):
        model.train()
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        varies = None
        if step % EVAL_EVERY == EVAL_EVERY - 1:
            model.eval()
            with torch.no_grad():
                first, second = model(inputs[0]), model(inputs[0])
            varies = not torch.equal(first, second)
        log.step(step, bool(varies), loss=loss.item(), evaluated=varies is not None,
                 eval_outputs_vary=varies)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
