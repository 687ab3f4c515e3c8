#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: a wide-and-deep net (nn.Bilinear beside an MLP) with Adamax; a layer frozen at step K.

The buggy twin sets requires_grad False on the deep part's first layer at step
K (a gradual-unfreezing schedule with its condition inverted): from then on that
layer gets no gradient and stops changing. The fixed twin keeps every layer
trainable. Truth per step: trainable_parameters, frozen (layer names),
parameters_changed, lr, training.

    /usr/bin/python3 case_bilinear_frozen.py --bug --log /tmp/bilinear.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402


class WideAndDeep(nn.Module):
    def __init__(self):
        super().__init__()
        self.wide = nn.Bilinear(6, 6, 3)
        self.deep = nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 3))

    def forward(self, features):
        return self.wide(features, features) + self.deep(features)


def main():
    args = common.parser(__doc__.splitlines()[0], bug="layer deep.0 frozen from step K",
                         trigger=5).parse_args()
    torch.manual_seed(args.seed)
    model = WideAndDeep()
    optimizer = torch.optim.Adamax(model.parameters(), lr=0.02)
    features, labels = torch.randn(args.steps, 8, 6), torch.randint(0, 3, (args.steps, 8))
    steps = []
    model.train()
    for step in range(args.steps):
        frozen = args.bug and step >= args.trigger
        if frozen:
            for parameter in model.deep[0].parameters():
                parameter.requires_grad_(False)
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(features[step]), labels[step])
        loss.backward()
        optimizer.step()
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(),
                                 frozen=["deep.0"] if frozen else []))
    common.write_log(args.log, *common.case_truth(args, "layer frozen mid-run"), steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
