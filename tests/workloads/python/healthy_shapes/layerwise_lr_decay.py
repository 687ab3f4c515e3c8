#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: layer-wise learning-rate decay (LLRD), one parameter group per layer.

Fine-tuning as BERT/ViT recipes do: the head gets the base rate, each layer
below it the rate of the one above times 0.7, norms and biases without weight
decay; AdamW, a linear decay of every group's rate to zero (LambdaLR, one
factor for all groups), clip_grad_norm_, zero_grad(set_to_none=True) after
the step, one process, CPU.

    /usr/bin/python3 layerwise_lr_decay.py --steps 10 --log-dir /tmp/llrd
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

BASE_LR, DECAY, LAYERS = 1e-3, 0.7, 4


def groups(model):
    layers = list(model.blocks) + [model.head]
    found = []
    for depth, layer in enumerate(reversed(layers)):
        lr = BASE_LR * DECAY ** depth
        decay = [p for n, p in layer.named_parameters() if p.ndim > 1]
        plain = [p for n, p in layer.named_parameters() if p.ndim <= 1]
        found.append({"params": decay, "lr": lr, "weight_decay": 0.01})
        found.append({"params": plain, "lr": lr, "weight_decay": 0.0})
    return found


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(16), nn.Linear(16, 16), nn.GELU()) for _ in range(LAYERS))
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = Encoder()
    optimizer = torch.optim.AdamW(groups(model))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: max(0.0, 1.0 - s / (args.steps + 1)))
    inputs, labels = torch.randn(args.steps, 12, 16), torch.randint(0, 2, (args.steps, 12))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(model.parameters())
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
        optimizer.zero_grad(set_to_none=True)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
