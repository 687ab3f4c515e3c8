#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What the optimizer's updates find in each parameter, logged by the program itself.

A small model (Linear 6->5, an Embedding 4x5 added in, Linear 5->2 whose
weight is frozen, and a 3x1x2 parameter of its own, whose sum is added to
the output) trained with plain SGD (lr 0.1, no momentum: one update,
param.add_(grad, alpha=-0.1), per parameter that requires grad and step, in
the order of model.parameters()). Before each step's optimizer.step() the
log gets one JSON line per parameter: the step, its position, whether it
requires grad, dtype, sizes, size in bytes, and the first and last 64 bytes
of its storage (all of it when smaller), as hex. A tracer that reads the
tensors' contents must agree with this. After each step the model runs once
more under torch.no_grad() and once under torch.inference_mode() (two
evaluations: their reads get no gradient), so each step's weights are read
three times with autograd on, then six times with it off: the forward also
reads a weight it computes from the first layer's (a 3x5 slice times 1.0,
as MAML's fast weights are computed), which autograd computes (it has a
grad_fn) only with autograd on. Each forward's line in the log says whether
autograd was on in it (torch.is_grad_enabled()) and whether the computed
weight had a grad_fn.

    /usr/bin/python3 tensor_contents.py --steps 4 --log /tmp/contents.jsonl
"""
import argparse
import json

import torch
from torch import nn

SAMPLE_BYTES = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(6, 5)
        self.table = nn.Embedding(4, 5)
        self.last = nn.Linear(5, 2)
        self.cube = nn.Parameter(torch.randn(3, 1, 2))
        self.last.weight.requires_grad_(False)

    def forward(self, features, tokens):
        hidden = torch.relu(self.first(features) + self.table(tokens))
        computed = self.first.weight[:3, :5] * 1.0
        self.computed_grad_fn = computed.grad_fn is not None
        mixed = nn.functional.linear(hidden, computed)
        return self.last(hidden) + self.cube.sum() + mixed.sum() * 0.0


def storage_bytes(parameter):
    data = parameter.detach().contiguous().numpy().tobytes()
    return data[:SAMPLE_BYTES], data[-SAMPLE_BYTES:] if len(data) >= SAMPLE_BYTES else b"", len(data)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--log", required=True)
    args = parser.parse_args()
    torch.manual_seed(7)
    model = Model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    features, tokens = torch.randn(args.steps, 8, 6), torch.randint(0, 4, (args.steps, 8))
    targets = torch.randn(args.steps, 8, 2)
    with open(args.log, "w", encoding="utf-8") as log:
        for step in range(args.steps):
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(features[step], tokens[step]), targets[step])
            log.write(json.dumps({"step": step, "forward": "training",
                                  "grad_enabled": torch.is_grad_enabled(),
                                  "computed_grad_fn": model.computed_grad_fn}) + "\n")
            loss.backward()
            for position, parameter in enumerate(model.parameters()):
                head, tail, size = storage_bytes(parameter)
                log.write(json.dumps({"step": step, "position": position,
                                      "requires_grad": parameter.requires_grad,
                                      "dtype": str(parameter.dtype), "sizes": list(parameter.shape),
                                      "nbytes": size, "head": head.hex(), "tail": tail.hex()}) + "\n")
            optimizer.step()
            with torch.no_grad():
                model(features[step], tokens[step])
                log.write(json.dumps({"step": step, "forward": "no_grad",
                                      "grad_enabled": torch.is_grad_enabled(),
                                  "computed_grad_fn": model.computed_grad_fn}) + "\n")
            with torch.inference_mode():
                model(features[step], tokens[step])
                log.write(json.dumps({"step": step, "forward": "inference_mode",
                                      "grad_enabled": torch.is_grad_enabled(),
                                  "computed_grad_fn": model.computed_grad_fn}) + "\n")
    print("trained {} steps".format(args.steps))


if __name__ == "__main__":
    main()
