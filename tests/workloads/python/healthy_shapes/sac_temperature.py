#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: soft actor-critic's update: critic, policy and temperature, three optimizers.

As Spinning Up and CleanRL write SAC's update on a batch of transitions:
the critic fitted to a target computed under no_grad (a target copy of
the critic, the policy's next actions and their log-probabilities); then
the policy through the critic; then the temperature, a raw log_alpha
tensor with an Adam of its own, whose loss reads no layer (the
log-probabilities detached); the target critic moved by Polyak averaging.
Each optimizer's step is a step of its own, logged. One process, CPU.

    /usr/bin/python3 sac_temperature.py --steps 10 --log-dir /tmp/sac
"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

STATE, ACTION, BATCH = 6, 2, 32


class Policy(nn.Module):
    """A squashed Gaussian policy: actions in (-1, 1) and their log-probabilities."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(STATE, 32), nn.ReLU(), nn.Linear(32, 2 * ACTION))

    def forward(self, states):
        mean, log_std = self.body(states).chunk(2, dim=-1)
        log_std = log_std.clamp(-5, 2)
        noise = torch.randn_like(mean)
        raw = mean + log_std.exp() * noise
        actions = torch.tanh(raw)
        log_prob = (-0.5 * noise ** 2 - log_std).sum(-1, keepdim=True)
        log_prob = log_prob - torch.log(1 - actions ** 2 + 1e-6).sum(-1, keepdim=True)
        return actions, log_prob


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    policy = Policy()
    critic = nn.Sequential(nn.Linear(STATE + ACTION, 32), nn.ReLU(), nn.Linear(32, 1))
    target_critic = copy.deepcopy(critic)
    log_alpha = torch.zeros(1, requires_grad=True)
    optimizer_policy = torch.optim.Adam(policy.parameters(), lr=3e-4)
    optimizer_critic = torch.optim.Adam(critic.parameters(), lr=3e-4)
    optimizer_alpha = torch.optim.Adam([log_alpha], lr=3e-4)
    log = common.StepLog(args.log_dir)
    step = 0

    def update(optimizer, loss, parameters, model):
        """One optimizer's step on its loss, logged; whether the run goes on."""
        nonlocal step
        parameters = list(parameters)
        before = common.snapshot(parameters)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, parameters), model=model)
        step += 1
        return step < args.steps

    while step < args.steps:
        states, actions = torch.randn(BATCH, STATE), torch.rand(BATCH, ACTION) * 2 - 1
        rewards, next_states = torch.randn(BATCH, 1), torch.randn(BATCH, STATE)
        with torch.no_grad():
            next_actions, next_log_prob = policy(next_states)
            next_value = target_critic(torch.cat([next_states, next_actions], 1))
            target = rewards + 0.99 * (next_value - log_alpha.exp() * next_log_prob)
        loss_critic = nn.functional.mse_loss(critic(torch.cat([states, actions], 1)), target)
        if not update(optimizer_critic, loss_critic, critic.parameters(), "critic"):
            break
        new_actions, log_prob = policy(states)
        loss_policy = (log_alpha.exp().detach() * log_prob
                       - critic(torch.cat([states, new_actions], 1))).mean()
        if not update(optimizer_policy, loss_policy, policy.parameters(), "policy"):
            break
        loss_alpha = -(log_alpha * (log_prob.detach() - ACTION)).mean()
        going_on = update(optimizer_alpha, loss_alpha, [log_alpha], "temperature")
        with torch.no_grad():
            for weight, target_weight in zip(critic.parameters(), target_critic.parameters()):
                target_weight.mul_(0.995).add_(weight, alpha=0.005)
        if not going_on:
            break
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
