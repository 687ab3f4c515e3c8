#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: a DataLoader whose last batch of each epoch is smaller, on sequences of varied length.

A text classifier (embedding, LSTM over packed sequences, linear head) is
trained by AdamW on a dataset of 70 sequences of 3 to 12 tokens, in
shuffled batches of 16 with `drop_last=False`: every epoch ends with a
batch of 6, and each batch is padded to its own longest sequence, so the
shapes change from step to step, as in most NLP training. One process, CPU.

    /usr/bin/python3 partial_last_batch.py --steps 10 --log-dir /tmp/partial
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence  # noqa: E402

import shapes_common as common  # noqa: E402

SEQUENCES, VOCABULARY, BATCH = 70, 50, 16


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCABULARY, 16, padding_idx=0)
        self.lstm = nn.LSTM(16, 24, batch_first=True)
        self.head = nn.Linear(24, 2)

    def forward(self, tokens, lengths):
        packed = pack_padded_sequence(self.embedding(tokens), lengths, batch_first=True,
                                      enforce_sorted=False)
        _, (hidden, _) = self.lstm(packed)
        return self.head(hidden[-1])


def collate(batch):
    sequences, labels = zip(*batch)
    lengths = torch.tensor([len(sequence) for sequence in sequences])
    return pad_sequence(sequences, batch_first=True), lengths, torch.stack(labels)


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    lengths = torch.randint(3, 13, (SEQUENCES,)).tolist()
    data = [(torch.randint(1, VOCABULARY, (length,)), torch.tensor(length % 2))
            for length in lengths]
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=True, drop_last=False,
                                         collate_fn=collate)
    model = Classifier()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    log = common.StepLog(args.log_dir)
    step = 0
    while step < args.steps:
        for tokens, token_counts, labels in loader:
            if step == args.steps:
                break
            before = common.snapshot(model.parameters())
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(tokens, token_counts), labels)
            loss.backward()
            optimizer.step()
            log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                     batch=len(labels))
            step += 1
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
