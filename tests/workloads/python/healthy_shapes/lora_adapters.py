#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: LoRA fine-tuning: frozen base linears, low-rank adapters trained by AdamW.

Each adapted layer keeps its pretrained weight frozen (requires_grad False)
and adds a low-rank update B @ A scaled by alpha / r, A drawn at random and
B zero at the start (so the first step's gradient of A is zero), as the
PEFT library sets them up; only the adapters and the head are in the
optimizer. One process, CPU.

    /usr/bin/python3 lora_adapters.py --steps 10 --log-dir /tmp/lora
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


class LoRALinear(nn.Module):
    def __init__(self, base, rank=4, alpha=8):
        super().__init__()
        self.base = base
        self.base.weight.requires_grad_(False)
        self.base.bias.requires_grad_(False)
        self.lora_a = nn.Parameter(torch.empty(rank, base.in_features))
        self.lora_b = nn.Parameter(torch.zeros(base.out_features, rank))
        nn.init.kaiming_uniform_(self.lora_a, a=math.sqrt(5))
        self.scale = alpha / rank

    def forward(self, x):
        update = nn.functional.linear(nn.functional.linear(x, self.lora_a), self.lora_b)
        return self.base(x) + self.scale * update


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    body = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
    model = nn.Sequential(LoRALinear(body[0]), nn.ReLU(), LoRALinear(body[2]), nn.ReLU(),
                          nn.Linear(32, 4))
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-3, weight_decay=0.01)
    inputs = torch.randn(args.steps, 12, 16)
    targets = torch.randn(args.steps, 12, 4)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(trainable)
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, trainable))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
