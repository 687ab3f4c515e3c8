#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: a tiny attention block with Adam; only the head is left trainable, by name.

The script fine-tunes the head alone: before training, every parameter's
requires_grad becomes name.startswith(PREFIX). The buggy twin uses the prefix
"head." but the model is wrapped in an nn.Sequential, so every name starts
with "0.": no parameter matches, every layer is frozen, and Adam steps on
nothing (the loop backpropagates only a loss that requires grad). The fixed
twin uses the right prefix, "0.head.". Truth per step: trainable_parameters,
parameters_changed, lr, training.

    /usr/bin/python3 case_attention_prefix.py --bug --log /tmp/attention.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402


class AttentionBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
        self.norm = nn.LayerNorm(8)
        self.head = nn.Linear(8, 2)

    def forward(self, tokens):
        attended, _ = self.attention(tokens, tokens, tokens)
        return self.head(self.norm(tokens + attended).mean(dim=1))


def main():
    args = common.parser(__doc__.splitlines()[0],
                         bug="a wrong name prefix freezes every layer (Adam steps on "
                             "nothing)").parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(AttentionBlock())
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    tokens, labels = torch.randn(args.steps, 8, 4, 8), torch.randint(0, 2, (args.steps, 8))
    prefix = "head." if args.bug else "0.head."
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(name.startswith(prefix))
    steps = []
    model.train()
    for step in range(args.steps):
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(tokens[step]), labels[step])
        if loss.requires_grad:
            loss.backward()
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item()))
    common.write_log(args.log, *common.case_truth(args, "every layer frozen by a wrong prefix"),
                     steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
