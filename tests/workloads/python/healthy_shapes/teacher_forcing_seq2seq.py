#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a GRU encoder-decoder trained with teacher forcing drawn at random per batch.

PyTorch's seq2seq tutorial loop: an encoder and a decoder, each an
nn.Module with its own Adam optimizer; for each batch the decoder is fed
the target tokens (teacher forcing) or its own argmax predictions, drawn
with probability 0.5, so steps run different operators; both optimizers
step after `clip_grad_norm_` on each model. One process, CPU.

    /usr/bin/python3 teacher_forcing_seq2seq.py --steps 10 --log-dir /tmp/seq2seq
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

VOCABULARY, WIDTH, LENGTH, START = 20, 24, 6, 0


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, WIDTH)
        self.gru = nn.GRU(WIDTH, WIDTH, batch_first=True)

    def forward(self, tokens):
        _, hidden = self.gru(self.embedding(tokens))
        return hidden


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, WIDTH)
        self.gru = nn.GRU(WIDTH, WIDTH, batch_first=True)
        self.out = nn.Linear(WIDTH, VOCABULARY)

    def forward(self, token, hidden):
        output, hidden = self.gru(self.embedding(token), hidden)
        return self.out(output), hidden


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--teacher-forcing", type=float, default=0.5, metavar="P",
                         help="probability of feeding the targets (default 0.5)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    draw = random.Random(args.seed)
    encoder, decoder = Encoder(), Decoder()
    encoder_optimizer = torch.optim.Adam(encoder.parameters(), lr=3e-3)
    decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=3e-3)
    sources = torch.randint(1, VOCABULARY, (args.steps, 8, LENGTH))
    targets = sources.flip(-1)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(list(encoder.parameters()) + list(decoder.parameters()))
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        hidden = encoder(sources[step])
        token = torch.full((8, 1), START, dtype=torch.long)
        forced = draw.random() < args.teacher_forcing
        loss = 0
        for position in range(LENGTH):
            logits, hidden = decoder(token, hidden)
            target = targets[step, :, position]
            loss = loss + nn.functional.cross_entropy(logits.squeeze(1), target)
            token = target.unsqueeze(1) if forced else logits.argmax(-1).detach()
        loss = loss / LENGTH
        loss.backward()
        nn.utils.clip_grad_norm_(encoder.parameters(), 1.0)
        nn.utils.clip_grad_norm_(decoder.parameters(), 1.0)
        encoder_optimizer.step()
        decoder_optimizer.step()
        changed = common.changed(before, list(encoder.parameters()) + list(decoder.parameters()))
        log.step(step, decoder_optimizer, loss, changed, teacher_forcing=forced)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
