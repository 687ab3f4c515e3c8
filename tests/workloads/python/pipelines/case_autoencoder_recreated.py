#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Case: an autoencoder with SGD (Nesterov momentum); the model is re-created at step K.

At step K the script rebuilds the model from a state dict (as a reload of the
best checkpoint does). The buggy twin keeps the old optimizer, which holds the
parameters of the discarded model: the model trained from then on never
changes. The fixed twin builds a new optimizer on the new model and loads the
old one's state. Truth per step: parameters_changed (of the model in use),
optimizer_updates_model, lr, training.

    /usr/bin/python3 case_autoencoder_recreated.py --bug --log /tmp/autoencoder.json
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import pipeline_common as common  # noqa: E402


def autoencoder():
    return nn.Sequential(nn.Linear(16, 6), nn.Sigmoid(), nn.Linear(6, 16))


def sgd(parameters):
    return torch.optim.SGD(parameters, lr=0.1, momentum=0.9, nesterov=True)


def main():
    args = common.parser(__doc__.splitlines()[0],
                         bug="the optimizer keeps the parameters of the model replaced at step K",
                         trigger=5).parse_args()
    torch.manual_seed(args.seed)
    model = autoencoder()
    optimizer = sgd(model.parameters())
    inputs = torch.rand(args.steps, 8, 16)
    steps = []
    for step in range(args.steps):
        if step == args.trigger:
            fresh = autoencoder()
            fresh.load_state_dict(model.state_dict())
            model = fresh
            if not args.bug:
                state = optimizer.state_dict()
                optimizer = sgd(model.parameters())
                optimizer.load_state_dict(state)
        model.train()
        before = common.snapshot(model)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(inputs[step]), inputs[step])
        loss.backward()
        optimizer.step()
        in_use = set(map(id, model.parameters()))
        steps.append(common.fact(step, model, optimizer, before, loss=loss.item(),
                                 optimizer_updates_model=all(
                                     id(p) in in_use for p in optimizer.param_groups[0]["params"])))
    common.write_log(args.log, *common.case_truth(args, "optimizer on a replaced model"), steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
