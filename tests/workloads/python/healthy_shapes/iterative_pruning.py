#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: iterative magnitude pruning with torch.nn.utils.prune during training.

An MLP trained by SGD with momentum; at --prune-at (4) and again at twice
that step, `prune.l1_unstructured` removes 30% of each linear layer's
smallest weights: the layer's parameter becomes `weight_orig`, the optimizer
keeps updating it, and each forward computes `weight = weight_orig *
weight_mask` in a pre-hook, as pruning-aware training does. One process,
CPU.

    /usr/bin/python3 iterative_pruning.py --steps 10 --log-dir /tmp/pruning
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.utils import prune  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    options = common.parser(__doc__.splitlines()[0])
    options.add_argument("--prune-at", type=int, default=4, metavar="K",
                         help="prune before steps K and 2K (default 4)")
    args = options.parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(),
                          nn.Linear(32, 3))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    parameters = list(model.parameters())
    inputs, labels = torch.randn(args.steps, 16, 12), torch.randint(0, 3, (args.steps, 16))
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        if step in (args.prune_at, 2 * args.prune_at):
            for layer in model:
                if isinstance(layer, nn.Linear):
                    prune.l1_unstructured(layer, "weight", amount=0.3)
        before = common.snapshot(parameters)
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, parameters),
                 pruned=sum(hasattr(layer, "weight_mask") for layer in model))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
