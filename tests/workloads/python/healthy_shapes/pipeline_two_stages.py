#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: pipeline parallel by hand, each rank one stage of the same shapes (gloo, CPU).

Each rank holds one stage of the model (two linears of 16, the same shapes on
every rank, its own initial weights) and an SGD optimizer of its own. Rank 0
feeds the batch forward; each rank receives its stage's input from the rank
before and sends its output to the rank after; the last computes the loss
and the gradients travel back the same way. Every rank steps its stage: the
ranks update tensors of equal shapes holding other values, by design.

    /usr/bin/python3 pipeline_two_stages.py --world-size 4 --steps 10 --log-dir /tmp/pipe
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

import shapes_common as common  # noqa: E402


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed + rank)
    stage = nn.Sequential(nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 16))
    optimizer = torch.optim.SGD(stage.parameters(), lr=0.05, momentum=0.9)
    generator = torch.Generator().manual_seed(args.seed)
    inputs = torch.randn(args.steps, 8, 16, generator=generator)
    targets = torch.randn(args.steps, 8, 16, generator=generator)
    parameters = list(stage.parameters())
    log = common.StepLog(args.log_dir, rank)
    for step in range(args.steps):
        before = common.snapshot(parameters)
        optimizer.zero_grad()
        if rank == 0:
            stage_input = inputs[step]
        else:
            stage_input = torch.empty(8, 16)
            dist.recv(stage_input, src=rank - 1)
            stage_input.requires_grad_(True)
        output = stage(stage_input)
        if rank == world_size - 1:
            loss = nn.functional.mse_loss(output, targets[step])
            loss.backward()
        else:
            dist.send(output.detach(), dst=rank + 1)
            output_grad = torch.empty(8, 16)
            dist.recv(output_grad, src=rank + 1)
            output.backward(output_grad)
            loss = torch.tensor(0.0)
        if rank > 0:
            dist.send(stage_input.grad, dst=rank - 1)
        optimizer.step()
        log.step(step, optimizer, loss, common.changed(before, parameters))
    log.close()


def main():
    args = common.parser(__doc__.splitlines()[0], distributed=True).parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
