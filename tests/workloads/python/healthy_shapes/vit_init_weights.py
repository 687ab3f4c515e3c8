#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a vision transformer initialised as timm's are, inside a classifier with its own.

timm's VisionTransformer builds its layers (each LayerNorm zeroes its own
bias in reset_parameters), then applies its `_init_weights` to every
module: truncated-normal Linear weights, zeroed Linear and LayerNorm
biases, LayerNorm weights set to one. A fine-tuning classifier wrapping it
applies an initialisation of its own class to its modules, the backbone's
included, and zeroes its new head (timm's `head_init_scale` 0). Each
parameter is set by several initialisers, none twice by the same one.
Then AdamW with a no-decay group for biases and norms. One process, CPU.

    /usr/bin/python3 vit_init_weights.py --steps 10 --log-dir /tmp/vitinit
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

WIDTH, PATCHES, CLASSES = 16, 4, 3


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.attention = nn.MultiheadAttention(WIDTH, 2, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 2 * WIDTH), nn.GELU(), nn.Linear(2 * WIDTH, WIDTH))

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.attention(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = nn.Linear(8, WIDTH)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, WIDTH))
        self.blocks = nn.Sequential(Block(), Block())
        self.norm = nn.LayerNorm(WIDTH)
        nn.init.trunc_normal_(self.cls_token, std=0.02)
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.trunc_normal_(module.weight, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.LayerNorm):
            nn.init.zeros_(module.bias)
            nn.init.ones_(module.weight)

    def forward(self, patches):
        x = self.patch_embed(patches)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        return self.norm(self.blocks(x))[:, 0]


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = VisionTransformer()
        self.head = nn.Linear(WIDTH, CLASSES)
        self.apply(self._init_weights)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, patches):
        return self.head(self.backbone(patches))


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = Classifier()
    decay = [p for n, p in model.named_parameters() if p.ndim > 1 and "cls_token" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1 or "cls_token" in n]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    patches = torch.randn(args.steps, 12, PATCHES, 8)
    labels = (patches.mean(dim=(2, 3)) > 0).long() + (patches[..., 0].mean(-1) > 0.3).long()
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(patches[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
