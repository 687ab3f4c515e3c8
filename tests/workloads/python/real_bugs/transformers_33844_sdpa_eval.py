#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""transformers#33844, the SDPA shape: attention dropout_p passed whatever the mode.

The report's attention classes (M2M100's FlashAttention2 and SDPA paths)
handed their configured dropout rate to the attention kernel without
`if self.training else 0.0`: in eval() the attention weights are still
dropped. Here a pre-norm transformer block classifies token sequences with
SGD momentum and a cosine schedule, and a separate evaluate() runs a
held-out batch in eval() under no_grad every 4 steps. Its attention calls
`F.scaled_dot_product_attention(q, k, v, dropout_p=...)`; where torch has no
SDPA (1.13) it computes the same attention and calls `F.dropout(weights, p)`
(dropout's default `training=True`, the same mistake). The buggy twin
passes the rate in every mode; the fixed twin passes 0.0 outside training,
as the fix did. Symptom per step: an evaluation in that step gave two
different outputs for one batch.

    /usr/bin/python3 transformers_33844_sdpa_eval.py --bug --log-dir /tmp/tf33844-sdpa
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import bug_common as common  # noqa: E402

EVAL_EVERY = 4
HEADS, WIDTH, VOCAB = 2, 16, 24


def attention(q, k, v, dropout_p):
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p)
    weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p)
    return weights @ v


class SelfAttention(nn.Module):
    def __init__(self, attention_dropout, buggy):
        super().__init__()
        self.qkv, self.out = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)
        self.attention_dropout, self.buggy = attention_dropout, buggy

    def forward(self, hidden):
        batch, length, _ = hidden.shape
        q, k, v = (part.view(batch, length, HEADS, WIDTH // HEADS).transpose(1, 2)
                   for part in self.qkv(hidden).chunk(3, dim=-1))
        dropout_p = self.attention_dropout if (self.buggy or self.training) else 0.0
        context = attention(q, k, v, dropout_p)
        return self.out(context.transpose(1, 2).reshape(batch, length, WIDTH))


class Classifier(nn.Module):
    def __init__(self, buggy):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.norm1, self.norm2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.attn = SelfAttention(0.2, buggy)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 2 * WIDTH), nn.GELU(),
                                 nn.Linear(2 * WIDTH, WIDTH))
        self.head = nn.Linear(WIDTH, 3)

    def forward(self, tokens):
        hidden = self.embed(tokens)
        hidden = hidden + self.attn(self.norm1(hidden))
        hidden = hidden + self.mlp(self.norm2(hidden))
        return self.head(hidden.mean(1))


def evaluate(model, tokens):
    model.eval()
    with torch.no_grad():
        first, second = model(tokens), model(tokens)
    model.train()
    return not torch.equal(first, second)


def main():
    args = common.parser(__doc__.splitlines()[0], "pass the attention dropout in eval() "
                         "too").parse_args()
    torch.manual_seed(args.seed)
    model = Classifier(args.bug)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    generator = torch.Generator().manual_seed(args.seed + 1)
    tokens = torch.randint(0, VOCAB, (args.steps, 8, 7), generator=generator)
    labels = torch.randint(0, 3, (args.steps, 8), generator=generator)
    held_out = torch.randint(0, VOCAB, (8, 7), generator=generator)
    log = common.TruthLog(args, "transformers#33844 (SDPA)", "attention dropout_p in eval()",
                          EVAL_EVERY - 1)
    model.train()
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(tokens[step]), labels[step])
        loss.backward()
        optimizer.step()
        schedule.step()
        varies = evaluate(model, held_out) if step % EVAL_EVERY == EVAL_EVERY - 1 else None
        log.step(step, bool(varies), loss=loss.item(), evaluated=varies is not None,
                 eval_outputs_vary=varies)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
