#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pytorch#115607 (simulated): a compiled optimizer step stops updating after a step without grads.

Under `torch._dynamo.optimize("eager")`, a training loop whose parameters had
no gradient (None) for one iteration kept skipping them afterwards: the
optimizer's step counter stopped, and every update after the frozen
iterations was lost, with no error. torch 1.13 has no dynamo and torch 2.6 no
longer has the bug, so, as TrainCheck did, the effect is simulated: the step
function is "compiled" once (the parameters with a gradient at its first call
are captured, as a traced graph bakes in what it saw) and reused. The first
layer is frozen for the first two steps (its gradients None, a warm-up of the
head). In the buggy twin the captured list keeps the first layer out for good
once it is unfrozen at step K (2); the fixed twin re-traces when the set of
parameters with gradients changes (a guard). Symptom per step: a parameter
with a gradient was not changed by the step.

    /usr/bin/python3 pytorch_115607_stale_param_list.py --bug --log-dir /tmp/115607
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import bug_common as common  # noqa: E402

TRIGGER = 2


class CapturedStep:
    """An optimizer step traced once: the parameters that had gradients then, and only those."""

    def __init__(self, optimizer, guard):
        self.optimizer, self.guard, self.captured, self.key = optimizer, guard, None, None

    def __call__(self, parameters):
        key = tuple(p.grad is not None for p in parameters)
        if self.captured is None or (self.guard and key != self.key):
            self.captured = {id(p) for p in parameters if p.grad is not None}
            self.key = key
        for parameter in parameters:
            if id(parameter) not in self.captured:
                parameter.grad = None
        self.optimizer.step()


def main():
    args = common.parser(__doc__.splitlines()[0], "the step keeps the parameter list of its "
                         "first call").parse_args()
    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(10, 30), nn.ReLU(), nn.Linear(30, 3))
    parameters = list(model.parameters())
    optimizer = torch.optim.Adam(parameters, lr=0.01)
    step_function = CapturedStep(optimizer, guard=not args.bug)
    generator = torch.Generator().manual_seed(args.seed + 1)
    inputs = torch.randn(args.steps, 16, 10, generator=generator)
    labels = torch.randint(0, 3, (args.steps, 16), generator=generator)
    log = common.TruthLog(args, "pytorch#115607", "updates lost after a step without "
                          "gradients", TRIGGER)
    for step in range(args.steps):
        model[0].requires_grad_(step >= TRIGGER)
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        before = common.snapshot(parameters)
        with_grad = [p.grad is not None for p in parameters]
        step_function(parameters)
        moved = common.changed(before, parameters)
        lost = any(g and not m for g, m in zip(with_grad, moved))
        log.step(step, lost, loss=loss.item(), parameters_with_grad=sum(with_grad),
                 parameters_changed=sum(moved))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
