#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""transformers#34204: a processor turns a batch of 50 samples into a batch of one.

PixtralProcessor, given one image per sample as a flat list, aggregated all
the images into a single sample's list: `input_ids` came back with shape
[1, L] instead of [50, L], and fine-tuning went on with one sample per step,
silently. Here a collate function plays the processor for a small
vision-language classifier (image features concatenated to token
embeddings), trained with Adam. The buggy twin's collate nests the flat image
list as the processor did, so each step trains on the first sample only; the
fixed twin keeps one entry per sample. Symptom per step: the batch the model
got holds fewer samples than the loader gave (8).

    /usr/bin/python3 transformers_34204_batch_collapsed.py --bug --log-dir /tmp/tf34204
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402

BATCH = 8


def process(texts, images, buggy):
    """The processor: token ids [samples, length] and images [samples, ...]."""
    if buggy:
        images = [images]  # every image taken for one sample's list
    samples = len(images)
    return torch.stack(texts[:samples]), torch.stack([torch.stack(group).mean(0)
                                                      if isinstance(group, list) else group
                                                      for group in images])


class VisionLanguage(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.vision = nn.Embedding(20, 12), nn.Linear(3 * 8 * 8, 12)
        self.head = nn.Linear(24, 2)

    def forward(self, ids, pixels):
        return self.head(torch.cat([self.embed(ids).mean(1), self.vision(pixels.flatten(1))], 1))


def main():
    args = common.parser(__doc__.splitlines()[0], "the processor nests the image "
                         "list").parse_args()
    torch.manual_seed(args.seed)
    model = VisionLanguage()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(args.seed + 1)
    log = common.TruthLog(args, "transformers#34204", "batch collapsed to one sample", 0)
    for step in range(args.steps):
        texts = list(torch.randint(0, 20, (BATCH, 6), generator=generator))
        images = list(torch.randn(BATCH, 3, 8, 8, generator=generator))
        labels = torch.randint(0, 2, (BATCH,), generator=generator)
        ids, pixels = process(texts, images, args.bug)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(ids, pixels), labels[:len(ids)])
        loss.backward()
        optimizer.step()
        log.step(step, len(ids) < BATCH, loss=loss.item(), samples=len(ids))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
