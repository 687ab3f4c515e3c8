# SPDX-License-Identifier: MIT
"""What the pipeline workloads share: options, the per-step truth log, the DDP launcher.

Every script of this folder takes --steps, --seed and --log; a case also takes
--bug (the buggy twin) and, unless its bug is in the set-up (step 0), --trigger K.
The log is one JSON object:
{"bug": NAME or null, "trigger_step": K or null, "steps": [{"step": ..., ...}]},
one record per optimizer step (counted from 0), with what the script saw itself.
Torch APIs used here work on torch 1.13 and 2.6 (CPU).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import rendezvous_port  # noqa: E402

MASTER_ADDR = "127.0.0.1"


def parser(description, bug=None, trigger=None, steps=12, distributed=False):
    """Options of a workload; bug (a sentence) and trigger (the default K; None: a set-up
    mistake, in effect from step 0) for a case;
    distributed adds the hidden --worker a rank is started with (see launch())."""
    options = argparse.ArgumentParser(
        description=description,
        epilog="The JSON log (--log) is the run's truth: see README.md in this folder.")
    options.add_argument("--steps", type=int, default=steps,
                         help="optimizer steps (default {})".format(steps))
    options.add_argument("--seed", type=int, default=7, help="model and data seed (default 7)")
    options.add_argument("--log", default=None, metavar="FILE", help="write the truth as JSON")
    if bug:
        options.add_argument("--bug", action="store_true", help="the buggy twin: " + bug)
    if trigger is not None:
        options.add_argument("--trigger", type=int, default=trigger, metavar="K",
                             help="the step the bug takes effect (default {})".format(trigger))
    if distributed:
        options.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return options


def snapshot(model):
    return [parameter.detach().clone() for parameter in model.parameters()]


def changed(before, model):
    """Whether a step changed any parameter of the model."""
    return any(not torch.equal(old, new.detach()) for old, new in zip(before, model.parameters()))


def fact(step, model, optimizer, before, **extra):
    """One step's record: learning rate, training flag, parameters changed, trainable ones."""
    record = {
        "step": step,
        "lr": optimizer.param_groups[0]["lr"],
        "training": model.training,
        "parameters_changed": changed(before, model),
        "trainable_parameters": sum(1 for p in model.parameters() if p.requires_grad),
    }
    record.update(extra)
    return record


def write_log(path, bug, trigger, steps, **extra):
    """The truth: trigger is None for a healthy run or a fixed twin."""
    if not path:
        return
    truth = {"bug": bug, "trigger_step": trigger, "steps": steps}
    truth.update(extra)
    with open(path, "w", encoding="utf-8") as log:
        json.dump(truth, log, indent=1)
        log.write("\n")


def case_truth(args, name):
    """The bug and trigger step a case logs: none for the fixed twin."""
    return (name, getattr(args, "trigger", 0)) if args.bug else (None, None)


# Distributed: the `exec` launcher of ../train_ddp.py (each rank a fresh interpreter with
# RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in its initial environment).

def rank_log(path, rank):
    return "{}.rank-{}".format(path, rank) if path else None


def launch(world_size=2, timeout_s=120):
    """Starts this script again once per rank with --worker; merges the ranks' logs.

    Returns the exit status: the first failing rank's, or 1 on timeout."""
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    os.environ.setdefault("USE_LIBUV", "0")
    port = rendezvous_port.free_port(MASTER_ADDR)
    processes = []
    for rank in range(world_size):
        environment = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank),
                           WORLD_SIZE=str(world_size), MASTER_ADDR=MASTER_ADDR,
                           MASTER_PORT=str(port))
        processes.append(subprocess.Popen([sys.executable, os.path.abspath(sys.argv[0]),
                                           "--worker", *sys.argv[1:]], env=environment))
    deadline = time.monotonic() + timeout_s
    statuses = [None] * world_size
    while None in statuses and time.monotonic() < deadline:
        statuses = [process.poll() for process in processes]
        if any(status not in (None, 0) for status in statuses):
            break
        time.sleep(0.02)
    for process in processes:
        if process.poll() is None:
            process.terminate()
        process.wait()
    failed = [process.returncode for process in processes if process.returncode]
    return failed[0] if failed else (0 if None not in statuses else 1)


def merge_rank_logs(path, world_size):
    """Rank 0's log with every rank's steps under "ranks"; the per-rank files are removed."""
    if not path:
        return
    ranks = {}
    for rank in range(world_size):
        with open(rank_log(path, rank), encoding="utf-8") as log:
            ranks[str(rank)] = json.load(log)
        os.remove(rank_log(path, rank))
    merged = dict(ranks["0"])
    merged["ranks"] = {rank: truth["steps"] for rank, truth in ranks.items()}
    with open(path, "w", encoding="utf-8") as log:
        json.dump(merged, log, indent=1)
        log.write("\n")


def init_rank():
    """Joins the gloo group from the environment the launcher set; returns (rank, world size)."""
    import torch.distributed as dist
    dist.init_process_group("gloo", rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]))
    return dist.get_rank(), dist.get_world_size()


def replicas_identical(model):
    """Whether every rank holds the same parameters (an all_gather of a checksum)."""
    import torch.distributed as dist
    checksum = torch.stack([p.detach().double().sum() for p in model.parameters()])
    gathered = [torch.zeros_like(checksum) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, checksum)
    return all(torch.equal(values, gathered[0]) for values in gathered)


def run_worker(args, train_rank):
    """One rank (--worker): trains, waits for the others at a barrier, and ends at once.

    The interpreter's teardown is skipped (os._exit after flushing): a gloo process group can
    hang in destroy_process_group or in its destructors at exit (pytorch#75097, seen here on
    torch 1.13 and 2.6 under load), after all the rank did was logged, and the launcher would
    then stop the rank at its timeout. Its logs are written and closed by then.
    """
    import torch.distributed as dist
    rank, size = init_rank()
    train_rank(args, rank, size)
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def main_ddp(args, train_rank, world_size=2):
    """A DDP script's entry point: the launcher, or (with --worker) one rank's training."""
    if args.worker:
        run_worker(args, train_rank)
    status = launch(world_size)
    if status == 0:
        merge_rank_logs(args.log, world_size)
    return status
