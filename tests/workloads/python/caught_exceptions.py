#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""C++ exceptions thrown through traced torch functions and caught by the program.

A backward pass whose tensor hook raises (the autograd engine rethrows it
through torch::autograd::Engine::execute) and an in-place operator refusing
its arguments (at::_ops::add__Tensor::call throws), each caught, then a
training step that must still run. Prints what it caught and the step's
result; exits 0. A probe that broke the unwinding of these exceptions would
abort the process instead.

    /usr/bin/python3 caught_exceptions.py
"""
import sys

import torch


def main():
    torch.manual_seed(3)
    weight = torch.randn(4, requires_grad=True)
    loss = (weight * 2).sum()

    def refuse(_grad):
        raise RuntimeError("refused inside backward")

    handle = weight.register_hook(refuse)
    try:
        loss.backward()
        print("backward: no exception")
    except RuntimeError as error:
        print("backward: caught", "refused inside backward" in str(error))
    handle.remove()
    try:
        torch.ones(3).add_(torch.ones(4))
        print("add_: no exception")
    except RuntimeError as error:
        print("add_: caught", "must match" in str(error))
    optimizer = torch.optim.SGD([weight], lr=0.25)
    optimizer.zero_grad()
    (weight * weight).sum().backward()
    optimizer.step()
    print("step: weight", [round(value, 4) for value in weight.tolist()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
