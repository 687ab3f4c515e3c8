#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""DeepSpeed#1801: gradients of replicated LayerNorm weights clipped on rank 0 only.

DeepSpeed's BF16_Optimizer collected the gradients to clip with the filter
meant for the norm (count a replicated parameter once: only on rank 0), so on
the other ranks the LayerNorm weights, replicated on every rank, were not
clipped: their copies drifted apart (found by accident in BLOOM-176B's
training; loss and gradient norm looked the same). Here 2 data-parallel ranks
(gloo DDP) train a LayerNorm MLP; the gradient norm is computed over every
gradient and every step clips (max norm 0.05). In the buggy twin the list of
gradients to clip reuses the norm's filter, so rank 1 leaves the LayerNorm
gradients unclipped; the fixed twin clips every gradient on every rank.
Symptom per step: the replicas' LayerNorm weights differ after the step.

    /usr/bin/python3 deepspeed_1801_clip_replicated.py --bug --log-dir /tmp/ds1801
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import bug_common as common  # noqa: E402

MAX_NORM = 0.05


def grads_for_norm(model, rank, for_clipping, buggy):
    """The gradients to count (norm) or to scale (clipping); replicated ones counted once."""
    grads = []
    for module in model.modules():
        replicated = isinstance(module, nn.LayerNorm)
        for parameter in module.parameters(recurse=False):
            counted_once = replicated and rank != 0
            if counted_once and (buggy or not for_clipping):
                continue
            grads.append(parameter.grad)
    return grads


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed)
    module = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.ReLU(), nn.Linear(32, 32),
                           nn.LayerNorm(32), nn.ReLU(), nn.Linear(32, 4))
    model = DistributedDataParallel(module)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 8, 16, generator=generator)
    labels = torch.randint(0, 4, (args.steps, 8), generator=generator)
    norms = [m for m in module.modules() if isinstance(m, nn.LayerNorm)]
    log = common.TruthLog(args, "DeepSpeed#1801", "replicated LayerNorm gradients not clipped "
                          "on rank 1", 0, rank, world_size)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        with torch.no_grad():
            # Every rank holds the all-reduced gradients: the full norm, counted once.
            total = torch.norm(torch.stack([torch.norm(g) for g in
                                            (p.grad for p in module.parameters())]))
            scale = MAX_NORM / (float(total) + 1e-6)
            if scale < 1:
                for grad in grads_for_norm(module, rank, True, args.bug):
                    grad.mul_(scale)
        optimizer.step()
        agree = common.replicas_agree([p for m in norms for p in m.parameters()])
        log.step(step, not agree, loss=loss.item(), grad_norm=float(total), clipped=scale < 1,
                 layernorm_replicas_agree=agree)
    log.close()


def main():
    args = common.parser(__doc__.splitlines()[0], "rank 1 skips the LayerNorm gradients "
                         "when clipping", distributed=True).parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
