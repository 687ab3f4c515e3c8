#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a Transformer encoder with padding masks, warm-up by LambdaLR, evaluation in the loop.

`nn.TransformerEncoder` (2 layers, batch_first) over token batches padded to
different lengths, with `src_key_padding_mask`; mean pooling over the real
tokens and a linear head. AdamW with a no-decay group for biases and norms,
a linear warm-up then inverse square root decay through `LambdaLR` stepped
each iteration, `clip_grad_norm_`. Every --eval-every steps the model is
evaluated in eval() under no_grad() (on torch 2.x the encoder takes its fused
inference path there). One process, CPU.

    /usr/bin/python3 transformer_padding_eval.py --steps 10 --log-dir /tmp/transformer
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

VOCABULARY, WIDTH = 40, 32


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, WIDTH, padding_idx=0)
        layer = nn.TransformerEncoderLayer(WIDTH, nhead=4, dim_feedforward=64, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(WIDTH, 3)

    def forward(self, tokens):
        padding = tokens == 0
        hidden = self.encoder(self.embedding(tokens), src_key_padding_mask=padding)
        kept = (~padding).unsqueeze(-1).float()
        return self.head((hidden * kept).sum(dim=1) / kept.sum(dim=1))


def batch(size, longest, generator):
    lengths = torch.randint(2, longest + 1, (size,), generator=generator)
    tokens = torch.randint(1, VOCABULARY, (size, longest), generator=generator)
    tokens[torch.arange(longest).unsqueeze(0) >= lengths.unsqueeze(1)] = 0
    return tokens, lengths % 3


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--eval-every", type=int, default=4, metavar="K",
                         help="evaluate after every K-th step (default 4)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    model = Encoder()
    decay = [p for name, p in model.named_parameters() if p.dim() > 1 and "norm" not in name]
    no_decay = [p for name, p in model.named_parameters() if p.dim() <= 1 or "norm" in name]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    warmup = 3
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: (step + 1) / warmup if step < warmup
        else math.sqrt(warmup / (step + 1)))
    held_tokens, held_labels = batch(16, 9, generator)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        tokens, labels = batch(12, 5 + step % 4, generator)
        model.train()
        before = common.snapshot(model.parameters())
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(tokens), labels)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        validation = None
        if (step + 1) % args.eval_every == 0:
            model.eval()
            with torch.no_grad():
                validation = nn.functional.cross_entropy(model(held_tokens), held_labels).item()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 validation=validation)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
