#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Stack Overflow 67180955: DataLoader workers apply the same random augmentation.

Each DataLoader worker is a fork of the main process and inherits its NumPy
random state: augmentations drawn from it repeat across workers, so the model
sees the same "random" crops and noise again and again (torch 1.9 reseeds
NumPy's legacy global state in each worker; a `numpy.random.Generator` built
before the loader, today's idiom, is still copied as is). Here a dataset adds
noise from a module-level `default_rng` in 2 workers (batches alternate
between them), SGD on a linear classifier. The buggy twin keeps the inherited
generator; the fixed twin reseeds it per worker in `worker_init_fn` from
torch's worker seed. Symptom per step: the batch's augmentation noise equals
an earlier batch's (from step 1, the second worker's first batch).

    /usr/bin/python3 so_67180955_worker_same_augmentation.py --bug --log-dir /tmp/so67180955
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402

import bug_common as common  # noqa: E402

RNG = numpy.random.default_rng(0)


class NoisyPoints(Dataset):
    def __init__(self, size, seed):
        generator = torch.Generator().manual_seed(seed)
        self.points = torch.randn(size, 5, generator=generator)
        self.labels = torch.randint(0, 2, (size,), generator=generator)

    def __len__(self):
        return len(self.points)

    def __getitem__(self, index):
        noise = torch.from_numpy(RNG.normal(0.0, 0.1, 5).astype("float32"))
        return self.points[index] + noise, noise, self.labels[index]


def reseed(worker):
    global RNG
    RNG = numpy.random.default_rng(torch.utils.data.get_worker_info().seed % 2 ** 32)


def main():
    args = common.parser(__doc__.splitlines()[0], "the workers share the generator they "
                         "inherited").parse_args()
    torch.manual_seed(args.seed)
    model = nn.Linear(5, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(NoisyPoints(8 * args.steps, args.seed), batch_size=8, num_workers=2,
                        worker_init_fn=None if args.bug else reseed)
    log = common.TruthLog(args, "Stack Overflow 67180955", "workers repeat the augmentation", 1)
    seen = []
    for step, (points, noise, labels) in enumerate(loader):
        repeated = any(torch.equal(noise, earlier) for earlier in seen)
        seen.append(noise)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(points), labels)
        loss.backward()
        optimizer.step()
        log.step(step, repeated, loss=loss.item(), augmentation_repeated=repeated)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
