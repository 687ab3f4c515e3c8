#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""mmpretrain#702: `frozen_stages` applied in train() only, and train() never called.

Most mmpretrain backbones freeze their first stages in their `train()`
override, not in `__init__`; a runner that never calls `model.train()`
before training (modules are built in training mode) trains the stages the
config froze, with no error. Here a VGG-like backbone with `frozen_stages=1`
(its first stage) and a head, SGD momentum and weight decay: the buggy twin
starts training straight away; the fixed twin calls `model.train()` first.
Symptom per step: a parameter of a stage the config freezes was changed.

    /usr/bin/python3 mmpretrain_702_frozen_stages.py --bug --log-dir /tmp/mmpretrain702
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402


class TinyVGG(nn.Module):
    def __init__(self, frozen_stages):
        super().__init__()
        self.frozen_stages = frozen_stages
        self.stages = nn.ModuleList([
            nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)),
            nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))])
        self.head = nn.Linear(16, 5)

    def _freeze_stages(self):
        for stage in self.stages[:self.frozen_stages]:
            stage.eval()
            for parameter in stage.parameters():
                parameter.requires_grad = False

    def train(self, mode=True):
        super().train(mode)
        self._freeze_stages()
        return self

    def forward(self, x):
        for stage in self.stages:
            x = stage(x)
        return self.head(x.mean(dim=(2, 3)))


def main():
    args = common.parser(__doc__.splitlines()[0], "model.train() is never called before "
                         "training").parse_args()
    torch.manual_seed(args.seed)
    model = TinyVGG(frozen_stages=1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    if not args.bug:
        model.train()
    generator = torch.Generator().manual_seed(args.seed + 1)
    images = torch.randn(args.steps, 8, 3, 16, 16, generator=generator)
    labels = torch.randint(0, 5, (args.steps, 8), generator=generator)
    frozen = list(model.stages[0].parameters())
    log = common.TruthLog(args, "mmpretrain#702", "frozen stages trained", 0)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images[step]), labels[step])
        loss.backward()
        before = common.snapshot(frozen)
        optimizer.step()
        moved = any(common.changed(before, frozen))
        log.step(step, moved, loss=loss.item(), frozen_stage_changed=moved)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
