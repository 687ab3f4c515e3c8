#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: prompt tuning: a frozen model, only a soft prompt trained.

The prompt-tuning recipe (Lester et al., PEFT's PROMPT_TUNING): a small
pretrained classifier (embedding, a Transformer encoder layer, a linear
head) is frozen whole; a learned soft prompt of 6 vectors, an
nn.Parameter, is joined in front of each sequence's token embeddings with
torch.cat, and AdamW trains it alone. No weight the forward reads through
linear or embedding ever changes; the prompt is read through cat. One
process, CPU.

    /usr/bin/python3 prompt_tuning.py --steps 10 --log-dir /tmp/prompt
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

VOCABULARY, WIDTH, PROMPT = 50, 32, 6


class PromptedClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, WIDTH)
        self.encoder = nn.TransformerEncoderLayer(WIDTH, nhead=4, dim_feedforward=64,
                                                  dropout=0.0, batch_first=True)
        self.head = nn.Linear(WIDTH, 2)
        self.requires_grad_(False)
        self.prompt = nn.Parameter(torch.randn(PROMPT, WIDTH) * 0.02)

    def forward(self, tokens):
        prompt = self.prompt.unsqueeze(0).expand(tokens.shape[0], -1, -1)
        hidden = self.encoder(torch.cat([prompt, self.embedding(tokens)], dim=1))
        return self.head(hidden[:, 0])


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = PromptedClassifier()
    optimizer = torch.optim.AdamW([model.prompt], lr=3e-2)
    tokens = torch.randint(0, VOCABULARY, (args.steps, 8, 10))
    labels = (tokens[:, :, 0] % 2)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot([model.prompt])
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(tokens[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, [model.prompt]))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
