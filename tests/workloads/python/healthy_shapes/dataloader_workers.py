#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: batches from a DataLoader with two worker processes, shuffled, augmented.

The usual input pipeline: a map-style dataset that adds noise to each
sample (seeded per worker by torch), a DataLoader with num_workers=2 (two
forked processes that import nothing new and train nothing) and shuffle,
pinned off; a CNN and Adam in the main process, one optimizer step a batch.
One training process, CPU.

    /usr/bin/python3 dataloader_workers.py --steps 10 --log-dir /tmp/workers
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

import shapes_common as common  # noqa: E402


class NoisySignals(Dataset):
    def __init__(self, count):
        generator = torch.Generator().manual_seed(3)
        self.signals = torch.randn(count, 2, 24, generator=generator)
        self.labels = torch.randint(0, 3, (count,), generator=generator)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return self.signals[index] + 0.05 * torch.randn(2, 24), self.labels[index]


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Conv1d(2, 8, 5), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                          nn.Linear(8, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loader = DataLoader(NoisySignals(8 * args.steps), batch_size=8, shuffle=True, num_workers=2)
    log = common.StepLog(args.log_dir)
    for step, (signals, labels) in enumerate(loader):
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(signals), labels)
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
