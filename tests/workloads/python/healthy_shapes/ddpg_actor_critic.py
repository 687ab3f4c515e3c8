#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: DDPG's update: a critic and an actor, each with its Adam, and target copies of both.

Each iteration (one log line) fits the critic to rewards plus the target
networks' discounted value, computed under torch.no_grad(), and steps its
optimizer; then the actor's loss runs through the critic, and the actor's
optimizer steps; then the target copies move a little towards the trained
networks (Polyak averaging through .data). The target networks are read
every step and never touched by an optimizer; the actor's backward leaves
gradients on the critic, cleared by the critic's zero_grad() next time.
Two optimizer steps per iteration. One process, CPU.

    /usr/bin/python3 ddpg_actor_critic.py --steps 10 --log-dir /tmp/ddpg
"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402

STATE, ACTION, TAU, GAMMA = 6, 2, 0.05, 0.99


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    actor = nn.Sequential(nn.Linear(STATE, 32), nn.ReLU(), nn.Linear(32, ACTION), nn.Tanh())
    critic = nn.Sequential(nn.Linear(STATE + ACTION, 32), nn.ReLU(), nn.Linear(32, 1))
    actor_target, critic_target = copy.deepcopy(actor), copy.deepcopy(critic)
    actor_optimizer = torch.optim.Adam(actor.parameters(), lr=1e-3)
    critic_optimizer = torch.optim.Adam(critic.parameters(), lr=1e-3)
    states = torch.randn(args.steps, 32, STATE)
    actions = torch.rand(args.steps, 32, ACTION) * 2 - 1
    rewards = torch.randn(args.steps, 32, 1)
    next_states = torch.randn(args.steps, 32, STATE)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        before = common.snapshot(list(actor.parameters()) + list(critic.parameters()))
        state, action, reward, next_state = (states[step], actions[step], rewards[step],
                                             next_states[step])
        with torch.no_grad():
            target_q = critic_target(torch.cat([next_state, actor_target(next_state)], 1))
            target_q = reward + GAMMA * target_q
        critic_loss = nn.functional.mse_loss(critic(torch.cat([state, action], 1)), target_q)
        critic_optimizer.zero_grad()
        critic_loss.backward()
        critic_optimizer.step()
        actor_loss = -critic(torch.cat([state, actor(state)], 1)).mean()
        actor_optimizer.zero_grad()
        actor_loss.backward()
        actor_optimizer.step()
        with torch.no_grad():
            for target, source in ((actor_target, actor), (critic_target, critic)):
                for target_parameter, parameter in zip(target.parameters(), source.parameters()):
                    target_parameter.data.copy_(TAU * parameter.data +
                                                (1 - TAU) * target_parameter.data)
        log.step(step, critic_optimizer, critic_loss, common.changed(
            before, list(actor.parameters()) + list(critic.parameters())),
            actor_loss=float(actor_loss), optimizer_steps=2)
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
