#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A one-rank DistributedDataParallel job on a GPU with the NCCL backend.

For checking the tracer against real PyTorch 2.x and NCCL on a GPU machine
(tools/gpu/gpu-check.sh): an MLP trained for --steps steps with SGD, plus one
explicit all-reduce and one broadcast per step, so the trace has collectives of
three kinds. --log writes the truth as JSON: the torch and NCCL versions, the
steps run, the explicit collectives made and the step times. --progress names a
file that gets each finished step's number, flushed, for a benchmark that reads
counters between two steps (tools/gpu/gpu-bench.sh). --cpu runs the same job on
the CPU with gloo, to try a script on a machine without a GPU.

    python3 ddp_nccl_gpu.py --steps 30 --log truth.json
"""
import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--log", default=None)
    parser.add_argument("--port", default="29517")
    parser.add_argument("--progress", default=None)
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", args.port)
    os.environ.setdefault("RANK", "0")
    os.environ.setdefault("WORLD_SIZE", "1")
    dist.init_process_group("gloo" if args.cpu else "nccl", rank=0, world_size=1)
    device = torch.device("cpu") if args.cpu else torch.device("cuda", 0)
    synchronize = (lambda: None) if args.cpu else torch.cuda.synchronize
    progress = open(args.progress, "w") if args.progress else None
    torch.manual_seed(0)
    model = DistributedDataParallel(
        nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10)).to(device),
        device_ids=None if args.cpu else [0])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    inputs = torch.randn(args.steps, 64, 256, device=device)
    targets = torch.randint(0, 10, (args.steps, 64), device=device)
    explicit = {"all_reduce": 0, "broadcast": 0}
    step_ms = []
    for step in range(args.steps):
        started = time.perf_counter()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(inputs[step]), targets[step])
        loss.backward()
        optimizer.step()
        metric = loss.detach().clone()
        dist.all_reduce(metric)
        explicit["all_reduce"] += 1
        dist.broadcast(metric, src=0)
        explicit["broadcast"] += 1
        synchronize()
        step_ms.append((time.perf_counter() - started) * 1000)
        if progress:
            progress.write(f"{step}\n")
            progress.flush()
    truth = {"torch": torch.__version__,
             "nccl": None if args.cpu else ".".join(map(str, torch.cuda.nccl.version())),
             "device": "cpu" if args.cpu else torch.cuda.get_device_name(0), "steps": args.steps,
             "explicit": explicit, "step_ms": step_ms, "pid": os.getpid()}
    dist.destroy_process_group()
    if args.log:
        with open(args.log, "w") as out:
            json.dump(truth, out)
    print(json.dumps({k: v for k, v in truth.items() if k != "step_ms"}))


if __name__ == "__main__":
    main()
