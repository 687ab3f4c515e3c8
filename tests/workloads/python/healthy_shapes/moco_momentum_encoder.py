#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Healthy: MoCo, a key encoder moved by momentum from the query encoder, a queue of keys.

As MoCo v2 trains: the query encoder learns by SGD; the key encoder, a copy
whose parameters do not require grad, runs in training mode (its batch norm
updates its statistics) under no_grad, and after each step its parameters
are moved towards the query encoder's (m = 0.99). The InfoNCE loss compares
each query with its key and a queue of earlier keys. One process, CPU.

    /usr/bin/python3 moco_momentum_encoder.py --steps 10 --log-dir /tmp/moco
"""
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import shapes_common as common  # noqa: E402

MOMENTUM, QUEUE, TEMPERATURE = 0.99, 64, 0.2


def main():
    args = common.parser(__doc__.splitlines()[0]).parse_args()
    torch.manual_seed(args.seed)
    query_encoder = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(),
                                  nn.Linear(32, 8))
    key_encoder = copy.deepcopy(query_encoder)
    for parameter in key_encoder.parameters():
        parameter.requires_grad = False
    queue = F.normalize(torch.randn(QUEUE, 8), dim=1)
    optimizer = torch.optim.SGD(query_encoder.parameters(), lr=0.03, momentum=0.9,
                                weight_decay=1e-4)
    images = torch.randn(args.steps, 16, 16)
    log = common.StepLog(args.log_dir)
    for step in range(args.steps):
        view_q = images[step] + 0.1 * torch.randn(16, 16)
        view_k = images[step] + 0.1 * torch.randn(16, 16)
        before = common.snapshot(query_encoder.parameters())
        q = F.normalize(query_encoder(view_q), dim=1)
        with torch.no_grad():
            k = F.normalize(key_encoder(view_k), dim=1)
        logits = torch.cat([(q * k).sum(dim=1, keepdim=True), q @ queue.t()], dim=1)
        loss = F.cross_entropy(logits / TEMPERATURE, torch.zeros(16, dtype=torch.long))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            for key, query in zip(key_encoder.parameters(), query_encoder.parameters()):
                key.data = key.data * MOMENTUM + query.data * (1.0 - MOMENTUM)
        queue = torch.cat([k, queue])[:QUEUE]
        log.step(step, optimizer, loss, common.changed(before, query_encoder.parameters()))
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
