#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: PPO's update: a rollout under no_grad, then 2 epochs of 2 minibatches over it.

A policy and a value network share one Adam. Each rollout of 64 states is
sampled under torch.no_grad() (the old log-probabilities and advantages),
then the clipped surrogate loss plus the value loss is minimised over two
epochs of two minibatches, with clip_grad_norm_. One log line per optimizer
step. One process, CPU.

    /usr/bin/python3 ppo_epochs.py --steps 10 --log-dir /tmp/ppo
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    policy = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 3))
    value = nn.Sequential(nn.Linear(6, 32), nn.Tanh(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(list(policy.parameters()) + list(value.parameters()), lr=3e-4)
    log = common.StepLog(args.log_dir)
    step = 0
    while step < args.steps:
        states = torch.randn(64, 6)
        with torch.no_grad():
            dist = torch.distributions.Categorical(logits=policy(states))
            actions = dist.sample()
            old_log_probs = dist.log_prob(actions)
            returns = torch.randn(64, 1)
            advantages = (returns - value(states)).squeeze(1)
        for _ in range(2):
            for batch in torch.randperm(64).split(32):
                if step >= args.steps:
                    break
                before = common.snapshot(list(policy.parameters()) + list(value.parameters()))
                new_dist = torch.distributions.Categorical(logits=policy(states[batch]))
                ratio = (new_dist.log_prob(actions[batch]) - old_log_probs[batch]).exp()
                clipped = torch.clamp(ratio, 0.8, 1.2) * advantages[batch]
                loss = -torch.min(ratio * advantages[batch], clipped).mean() + \
                    0.5 * nn.functional.mse_loss(value(states[batch]), returns[batch])
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(list(policy.parameters()) + list(value.parameters()), 0.5)
                optimizer.step()
                log.step(step, optimizer, loss, common.changed(
                    before, list(policy.parameters()) + list(value.parameters())))
                step += 1
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
