#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: an EmbeddingBag text classifier with Adagrad and a hand-written learning-rate warm-up.

Every step sets each param group's lr to base * min(1, warm-up factor) over
WARMUP (20) steps. The buggy twin computes the factor with integer division,
step // WARMUP, which is 0 for the whole run: the learning rate is 0 from step
0 and nothing is learned. The fixed twin uses (step + 1) / WARMUP. Truth per
step: lr, parameters_changed, training.

    /usr/bin/python3 case_embeddingbag_warmup.py --bug --log /tmp/embeddingbag.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402

WARMUP = 20
BASE_LR = 0.1


class BagClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(50, 10, mode="mean")
        self.classify = nn.Linear(10, 4)

    def forward(self, words, offsets):
        return self.classify(self.bag(words, offsets))


def main():
    args = common.parser(__doc__.splitlines()[0],
                         bug="the warm-up sets the learning rate to 0 (from step 0)").parse_args()
    torch.manual_seed(args.seed)
    model = BagClassifier()
    optimizer = torch.optim.Adagrad(model.parameters(), lr=BASE_LR)
    words = torch.randint(0, 50, (args.steps, 40))
    offsets = torch.arange(0, 40, 5)
    labels = torch.randint(0, 4, (args.steps, 8))
    steps = []
    model.train()
    for step in range(args.steps):
        factor = step // WARMUP if args.bug else (step + 1) / WARMUP
        for group in optimizer.param_groups:
            group["lr"] = BASE_LR * min(1.0, factor)
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(words[step], offsets), labels[step])
        loss.backward()
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item()))
    common.write_log(args.log, *common.case_truth(args, "warm-up sets lr to 0"), steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
