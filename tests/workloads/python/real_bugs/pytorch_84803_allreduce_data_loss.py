#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pytorch#84803 (also pytorch#96600, Baichuan2#86): data lost in transit between replicas.

On machines whose GPU peer-to-peer transfers are broken, what one card
receives from another is zeros or garbage, with no error: data-parallel
replicas then apply different gradients and drift apart (the reports: a loss
that does not fall, nonsense output). No CPU has the faulty link, so the loss
is injected as TrainCheck's reproduction does: a DDP communication hook
(gloo) all-reduces each bucket and, in the buggy twin, rank 1 receives zeros
instead of the reduced bucket at step K (4). The fixed twin's hook only
all-reduces. Symptom per step: the replicas' parameters differ after the step.

    /usr/bin/python3 pytorch_84803_allreduce_data_loss.py --bug --log-dir /tmp/84803
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import bug_common as common  # noqa: E402

TRIGGER = 4


class LossyLink:
    """The hook's state: the step under way, and the step at which rank 1 loses its buckets."""

    def __init__(self, lose_at_step):
        self.step, self.lose_at_step = 0, lose_at_step


def lossy_allreduce(state, bucket):
    """A communication hook: the mean of the bucket over the ranks, lost on one rank at one step."""
    tensor = bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()
    tensor.div_(dist.get_world_size())
    work = dist.all_reduce(tensor, async_op=True).get_future()

    def received(future):
        reduced = future.value()[0]
        if state.step == state.lose_at_step and dist.get_rank() == 1:
            reduced.zero_()
        return reduced
    return work.then(received)


def train_rank(args, rank, world_size):
    torch.manual_seed(args.seed)
    module = nn.Sequential(nn.Linear(8, 24), nn.SiLU(), nn.Linear(24, 24), nn.SiLU(),
                           nn.Linear(24, 2))
    model = DistributedDataParallel(module)
    link = LossyLink(TRIGGER if args.bug else -1)
    model.register_comm_hook(link, lossy_allreduce)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, nesterov=True)
    generator = torch.Generator().manual_seed(args.seed + 100 * (rank + 1))
    inputs = torch.randn(args.steps, 16, 8, generator=generator)
    labels = torch.randint(0, 2, (args.steps, 16), generator=generator)
    log = common.TruthLog(args, "pytorch#84803", "gradient bucket lost in transit on rank 1",
                          TRIGGER, rank, world_size)
    for step in range(args.steps):
        link.step = step
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), labels[step])
        loss.backward()
        optimizer.step()
        agree = common.replicas_agree(list(module.parameters()))
        log.step(step, not agree, loss=loss.item(), replicas_agree=agree,
                 digest=common.digest(module.parameters()))
    log.close()


def main():
    args = common.parser(__doc__.splitlines()[0], "rank 1 receives zeros for its gradient "
                         "buckets at step {}".format(TRIGGER), distributed=True).parse_args()
    return common.main_distributed(args, train_rank)


if __name__ == "__main__":
    sys.exit(main())
