#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: the last layer re-initialised every few steps, its Adam state cleared.

Deep reinforcement learning and continual-learning code fights the loss of
plasticity by resetting part of the network on a schedule ("The Primacy
Bias in Deep RL", Nikishin et al. 2022; shrink-and-perturb): every 4 steps
the head's `reset_parameters()` draws new weights and the optimizer's
state for them is dropped, so Adam starts them afresh; the body keeps
training through the resets. One process, CPU.

    /usr/bin/python3 periodic_head_reset.py --steps 10 --log-dir /tmp/headreset
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

RESET_EVERY = 4


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    body = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
    head = nn.Linear(32, 2)
    model = nn.Sequential(body, head)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    inputs = torch.randn(args.steps, 20, 6)
    targets = torch.stack([inputs[..., :3].sum(-1), inputs[..., 3:].prod(-1)], dim=-1)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        reset = step > 0 and step % RESET_EVERY == 0
        if reset:
            head.reset_parameters()
            for parameter in head.parameters():
                optimizer.state.pop(parameter, None)
        before = common.snapshot(model.parameters())
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, model.parameters()),
                 head_reset=reset)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
