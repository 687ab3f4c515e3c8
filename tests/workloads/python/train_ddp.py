#!/usr/bin/python3
"""Multi-process CPU DistributedDataParallel training that logs its API calls.

The distributed counterpart of train_cpu.py: the same model wrapped in
torch.nn.parallel.DistributedDataParallel, gloo backend, on 127.0.0.1, with
--world-size ranks (default 2) started by one command. Each rank writes
LOG_DIR/rank-R.jsonl in train_cpu.py's format, including the torch.distributed
calls it makes (init_process_group, barrier, all_gather, destroy_process_group)
and the DDP forward. After training, the ranks all_gather a checksum of their
parameters: if they differ, the run fails. Format and options: README.md.

Launchers (--launcher):
  exec   (default) each rank is a fresh interpreter started with
         subprocess.Popen([sys.executable, this file, "--worker", ...]) and
         RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT in its initial
         environment (visible in /proc/PID/environ), as torchrun does;
  spawn  torch.multiprocessing.spawn; each rank sets RANK etc. in os.environ
         first thing, but its initial environment is the launcher's;
  fork   multiprocessing "fork" processes, same caveat.

    /usr/bin/python3 tests/workloads/python/train_ddp.py --steps 10 --log-dir /tmp/ddp
"""

import argparse
import faulthandler
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

import rendezvous_port  # noqa: E402
import training_common  # noqa: E402

MASTER_ADDR = "127.0.0.1"
EXIT_PARAMETERS_DIFFER = 4
DDP_FORWARD_SCOPE = "DistributedDataParallel.forward"
# The signal on which a rank prints its threads' stacks, and how long the launcher gives each.
STACKS_SIGNAL = signal.SIGUSR2
STACKS_WAIT_S = 0.5
# Written in --log-dir by a rank that stops for good (--fault stop), once it logged its stop.
STOP_MARKER = "stopped"
# The rank's DDP model holds the last reference to its process group; kept here, neither is
# destroyed before end_rank ends the process (see end_rank).
KEPT_UNTIL_EXIT = []
# Asked by the launcher before it stops a rank that ran past --timeout, a rank (every
# process that runs this file, forked ones too) prints where each of its threads is,
# so that a run that hung says where.
faulthandler.register(STACKS_SIGNAL, all_threads=True)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        description="Train a 3-layer MLP with DistributedDataParallel (gloo, CPU) on several "
                    "local ranks; each rank logs every torch API call it makes.",
        epilog="example: %(prog)s --world-size 2 --steps 10 --log-dir /tmp/ddp")
    training_common.add_training_options(parser)
    parser.add_argument("--world-size", type=training_common.positive_int, default=2,
                        help="number of ranks (default 2)")
    parser.add_argument("--launcher", choices=("exec", "spawn", "fork"), default="exec",
                        help="how ranks are started (default exec)")
    parser.add_argument("--log-dir", default=None, metavar="DIR",
                        help="write DIR/rank-R.jsonl per rank and DIR/launcher.json")
    parser.add_argument("--progress", default=None, metavar="PATH",
                        help="file rewritten with the last finished step; '{rank}' in PATH is "
                             "replaced by the rank, otherwise only rank 0 writes it")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="the launcher stops the ranks after SECONDS (default 120)")
    parser.add_argument("--end-after-stop", type=float, default=None, metavar="SECONDS",
                        help="with --fault stop and --log-dir: the launcher stops the ranks "
                             "SECONDS after the rank stopped, as it does at --timeout, instead "
                             "of waiting for --timeout")
    parser.add_argument("--fault", default=None, metavar="KIND:R:K[:MS]",
                        help="inject a fault on rank R at step K, before its backward pass: "
                             "stop (the rank sleeps until killed and never all-reduces that "
                             "step's gradients), slow:R:K:MS (from step K on, the rank sleeps MS "
                             "ms each step), mismatch (every rank all-reduces a tensor, rank R "
                             "one of another size), raise (the rank raises RuntimeError), segv "
                             "(the rank reads address 0: SIGSEGV). Logged as a 'fault' record "
                             "first")
    parser.add_argument("--pair-groups", action="store_true",
                        help="every rank calls torch.distributed.new_group([r, r + 1]) for each "
                             "pair of neighbouring ranks, in order; before each backward pass a "
                             "rank all-reduces {} elements on each pair group it belongs to. "
                             "With it, --fault pair-mismatch:R:K: at step K rank R all-reduces "
                             "8 more on the group of ranks R-1 and R".format(PAIR_ELEMENTS))
    parser.add_argument("--checkpoint-every", type=training_common.positive_int, default=None,
                        metavar="N",
                        help="rank 0 saves a checkpoint before the backward pass of every N-th "
                             "step (N, 2N, ...): torch.save of the model to a file beside the "
                             "logs, repeated until --checkpoint-seconds passed, while the other "
                             "ranks wait in their all-reduce. Each pause is logged as a "
                             "'checkpoint' record with its start and end")
    parser.add_argument("--checkpoint-seconds", type=float, default=3.0, metavar="S",
                        help="how long each checkpoint lasts (default 3)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def rank_environment(rank, world_size, port):
    return {
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(world_size),
        "MASTER_ADDR": MASTER_ADDR,
        "MASTER_PORT": str(port),
    }


def worker_argv(args):
    """The options a rank needs, as a command line for --launcher exec."""
    argv = ["--worker", "--steps", str(args.steps), "--optimizer", args.optimizer,
            "--lr", repr(args.lr), "--batch-size", str(args.batch_size), "--seed", str(args.seed),
            "--eval-every", str(args.eval_every), "--step-sleep-ms", repr(args.step_sleep_ms),
            "--wait-timeout", repr(args.wait_timeout), "--world-size", str(args.world_size)]
    if args.clip is not None:
        argv += ["--clip", repr(args.clip)]
    if args.clip_only_rank:
        argv += ["--clip-only-rank", args.clip_only_rank]
    for option, value in (("--wait-file", args.wait_file), ("--log-dir", args.log_dir),
                          ("--progress", args.progress)):
        if value:
            argv += [option, value]
    if args.no_module_hooks:
        argv.append("--no-module-hooks")
    if args.fault:
        argv += ["--fault", args.fault]
    if args.pair_groups:
        argv.append("--pair-groups")
    if args.checkpoint_every:
        argv += ["--checkpoint-every", str(args.checkpoint_every),
                 "--checkpoint-seconds", repr(args.checkpoint_seconds)]
    return argv


def parse_fault(text):
    """--fault KIND:R:K[:MS] as (kind, rank, step, milliseconds), or None."""
    if not text:
        return None
    parts = text.split(":")
    if parts[0] not in ("stop", "slow", "mismatch", "pair-mismatch", "raise", "segv") or \
            len(parts) != (4 if parts[0] == "slow" else 3):
        raise SystemExit("train_ddp: --fault {!r}: expected stop:R:K, slow:R:K:MS, mismatch:R:K, "
                         "pair-mismatch:R:K, raise:R:K or segv:R:K".format(text))
    return parts[0], int(parts[1]), int(parts[2]), float(parts[3]) if parts[0] == "slow" else 0.0


MISMATCH_ELEMENTS = 64
PAIR_ELEMENTS = 16


def make_pair_groups(call_log, world_size):
    """new_group([r, r + 1]) for every pair of neighbours, on every rank: {first rank: group}."""
    groups = {}
    for first in range(world_size - 1):
        record = call_log.begin("torch.distributed.new_group([{}, {}])".format(first, first + 1),
                                dist.new_group)
        groups[first] = dist.new_group([first, first + 1])
        call_log.end(record)
    return groups


def pair_all_reduces(groups, fault, call_log, rank):
    """The hook that all-reduces on each pair group of this rank, with pair-mismatch if due."""
    kind, fault_rank, fault_step = fault[:3] if fault else (None, -1, -1)

    def hook(step):
        for first in (rank - 1, rank):
            if first not in groups:
                continue
            elements = PAIR_ELEMENTS
            if kind == "pair-mismatch" and step == fault_step and first == fault_rank - 1:
                elements += 8 if rank == fault_rank else 0
                record = call_log._new_record("fault")
                record.update({"fault": kind, "fault_rank": fault_rank, "fault_step": fault_step,
                               "step": step, "elements": elements,
                               "group_ranks": [first, first + 1]})
                call_log.flush()
            record = call_log.begin("torch.distributed.all_reduce(tensor, group=[{}, {}])".format(
                first, first + 1), dist.all_reduce)
            dist.all_reduce(torch.ones(elements), group=groups[first])
            call_log.end(record)

    return hook


def fault_before_backward(fault, call_log, rank, stop_marker):
    """The hook train() runs before each backward pass: the fault, where and when it is due.

    A rank that stops for good then writes STOP_MARKER (the path given, or none)."""
    kind, fault_rank, fault_step, milliseconds = fault

    def log_fault(step, **details):
        record = call_log._new_record("fault")
        record.update({"fault": kind, "fault_rank": fault_rank, "fault_step": fault_step})
        record.update(details)
        call_log.flush()

    def hook(step):
        if kind == "stop" and rank == fault_rank and step == fault_step:
            # The number of collectives this rank issued on its process group: the others
            # wait in the next one.
            group = dist.distributed_c10d._get_default_group()
            log_fault(step, next_call="c10d::allreduce", next_python_call="Tensor.backward",
                      c10d_sequence=group._get_sequence_number_for_group())
            if stop_marker:
                with open(stop_marker, "w", encoding="utf-8"):
                    pass
            while True:
                time.sleep(3600)
        if kind == "slow" and rank == fault_rank and step >= fault_step:
            if step == fault_step:
                log_fault(step, sleep_ms=milliseconds)
            time.sleep(milliseconds / 1000.0)
        if kind == "raise" and rank == fault_rank and step == fault_step:
            message = "injected fault at step {} on rank {}".format(step, rank)
            log_fault(step, exception="RuntimeError", message=message)
            raise RuntimeError(message)
        if kind == "segv" and rank == fault_rank and step == fault_step:
            log_fault(step, signal="SIGSEGV")
            import ctypes
            ctypes.string_at(0)
        if kind == "mismatch" and step == fault_step:
            elements = MISMATCH_ELEMENTS + (8 if rank == fault_rank else 0)
            log_fault(step, elements=elements)
            record = call_log.begin("torch.distributed.all_reduce(tensor)", dist.all_reduce)
            dist.all_reduce(torch.ones(elements))
            call_log.end(record)

    return hook


def checkpoint_before_backward(args, model, call_log, rank):
    """The hook that makes rank 0 pause for a checkpoint every --checkpoint-every steps."""
    directory = args.log_dir or os.getcwd()
    path = os.path.join(directory, "checkpoint-rank-{}.pt".format(rank))

    def hook(step):
        if rank != 0 or step == 0 or step % args.checkpoint_every:
            return
        record = call_log._new_record("checkpoint")
        started = time.monotonic()
        saves = 0
        # Written aside and renamed, as a careful job does; repeated to last the time asked.
        while saves == 0 or time.monotonic() - started < args.checkpoint_seconds:
            torch.save({"step": step, "model": model.state_dict(), "padding": torch.zeros(1 << 20)},
                       path + ".tmp")
            os.replace(path + ".tmp", path)
            saves += 1
        record.update({"rank": rank, "step": step, "saves": saves, "path": path,
                       "end_ns": training_common.monotonic_ns()})
        call_log.flush()

    return hook


def progress_path_for(template, rank):
    if not template:
        return None
    if "{rank}" in template:
        return template.replace("{rank}", str(rank))
    return template if rank == 0 else None


def run_rank(args):
    """One rank's whole run; RANK, WORLD_SIZE etc. are in os.environ. Returns the exit status."""
    rank = int(os.environ["RANK"])
    world_size = int(os.environ["WORLD_SIZE"])
    progress_path = progress_path_for(args.progress, rank)
    log_path = os.path.join(args.log_dir, "rank-{}.jsonl".format(rank)) if args.log_dir else None

    training_common.write_progress(progress_path, -1)
    if not training_common.wait_for_file(args.wait_file, args.wait_timeout):
        print("train_ddp rank {}: {} did not appear within {} s".format(
            rank, args.wait_file, args.wait_timeout), file=sys.stderr)
        return 3

    call_log = training_common.CallLog(log_path, rank=rank, world_size=world_size)
    try:
        return train_rank(args, call_log, rank, world_size, progress_path)
    finally:
        call_log.close()


def train_rank(args, call_log, rank, world_size, progress_path):
    record = call_log.begin('torch.distributed.init_process_group("gloo")', dist.init_process_group)
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    call_log.end(record)

    # Same model seed on every rank, a different data seed per rank.
    model, inputs, targets = training_common.set_up_model_and_data(
        call_log, args, data_seed=args.seed + 1000 * (rank + 1))

    record = call_log.begin("DistributedDataParallel(model)", DistributedDataParallel.__init__)
    model = DistributedDataParallel(model)
    call_log.end(record)
    KEPT_UNTIL_EXIT.append(model)
    if not args.no_module_hooks:
        training_common.register_module_hooks(model, call_log)
    optimizer, parameters = training_common.build_optimizer(call_log, args, model)

    record = call_log.begin("torch.distributed.barrier()", dist.barrier)
    dist.barrier()
    call_log.end(record)
    call_log.flush()

    fault = parse_fault(args.fault)
    hooks = []
    if args.pair_groups:
        hooks.append(pair_all_reduces(make_pair_groups(call_log, world_size), fault, call_log,
                                      rank))
    if fault and fault[0] != "pair-mismatch":
        stop_marker = os.path.join(args.log_dir, STOP_MARKER) if args.log_dir else None
        hooks.append(fault_before_backward(fault, call_log, rank, stop_marker))
    if args.checkpoint_every:
        hooks.append(checkpoint_before_backward(args, model, call_log, rank))
    final_loss = training_common.train(
        call_log, args, model, optimizer, parameters, inputs, targets, progress_path,
        forward_scope=DDP_FORWARD_SCOPE,
        before_backward=(lambda step: [hook(step) for hook in hooks]) if hooks else None)

    checksum = training_common.parameter_checksum(model)
    gathered = [torch.zeros_like(checksum) for _ in range(world_size)]
    record = call_log.begin("torch.distributed.all_gather(gathered, checksum)", dist.all_gather)
    dist.all_gather(gathered, checksum)
    call_log.end(record)
    all_checksums = [values.tolist() for values in gathered]
    identical = all(values == all_checksums[0] for values in all_checksums)

    record = call_log.begin("torch.distributed.barrier()", dist.barrier)
    dist.barrier()
    call_log.end(record)

    record = call_log.begin("torch.distributed.destroy_process_group()", dist.destroy_process_group)
    dist.destroy_process_group()
    call_log.end(record)

    call_log.write_summary(args.steps, final_loss=final_loss, parameter_checksum=checksum.tolist(),
                           all_checksums=all_checksums, parameters_identical=identical,
                           optimizer=type(optimizer).__qualname__)
    if not identical:
        print("train_ddp rank {}: parameters differ between ranks: {}".format(rank, all_checksums),
              file=sys.stderr)
        return EXIT_PARAMETERS_DIFFER
    print("train_ddp rank {}: {} steps, final loss {:.6f}, parameters identical on {} ranks "
          "(checksum {})".format(rank, args.steps, final_loss if final_loss is not None else float("nan"),
                                 world_size, checksum.tolist()))
    return 0


def end_rank(status):
    """A rank that finished, logged its summary and printed its line ends at once.

    The interpreter's teardown is skipped: torch 1.13's gloo process group can hang in its
    destructors at exit (pytorch#75097, "a certain probability of hangs"), after every call of
    the run has returned and been logged, and the launcher then stops the rank at its timeout.
    The process group's destructor would also run when train_rank's frame releases the DDP
    model, which still holds the group after destroy_process_group(): KEPT_UNTIL_EXIT keeps it.
    What the run did is unchanged; only the destructors do not run.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def spawned_rank(local_rank, args):
    """Entry point of a rank started by torch.multiprocessing.spawn or fork."""
    os.environ.update(rank_environment(local_rank, args.world_size, int(os.environ["MASTER_PORT"])))
    end_rank(run_rank(args))


def write_launcher_file(args, port, pids):
    if not args.log_dir:
        return
    description = {
        "launcher": args.launcher,
        "launcher_pid": os.getpid(),
        "world_size": args.world_size,
        "master_addr": MASTER_ADDR,
        "master_port": port,
        "ranks": [{"rank": rank, "pid": pid} for rank, pid in enumerate(pids)],
    }
    temporary = os.path.join(args.log_dir, "launcher.json.tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(description, handle, indent=1)
        handle.write("\n")
    os.replace(temporary, os.path.join(args.log_dir, "launcher.json"))


def exit_status(status):
    """A process status as a shell exit status (killed by signal N: 128 + N)."""
    return 128 - status if status < 0 else status


def print_stacks(processes):
    """Each running rank in turn prints its threads' Python stacks to its standard error."""
    for process in processes:
        print("train_ddp: the stacks of pid {}:".format(process.pid), file=sys.stderr, flush=True)
        try:
            os.kill(process.pid, STACKS_SIGNAL)
        except ProcessLookupError:
            continue
        time.sleep(STACKS_WAIT_S)


def stop_is_old(args):
    """With --end-after-stop: whether a rank stopped for good at least that long ago."""
    if args.end_after_stop is None or not args.log_dir:
        return False
    try:
        stopped = os.stat(os.path.join(args.log_dir, STOP_MARKER)).st_mtime
    except FileNotFoundError:
        return False
    return time.time() - stopped >= args.end_after_stop


def wait_for_processes(args, processes, poll_status, stop):
    """Wait for all ranks; stop the others as soon as one fails.

    Returns 0, or the exit status of the first rank that failed (1 on timeout, or once a
    rank stopped for good --end-after-stop seconds ago).
    """
    timeout_s = args.timeout
    deadline = time.monotonic() + timeout_s
    statuses = [None] * len(processes)
    while any(status is None for status in statuses):
        for index, process in enumerate(processes):
            if statuses[index] is None:
                statuses[index] = poll_status(process)
        failed = [(rank, status) for rank, status in enumerate(statuses) if status not in (None, 0)]
        timed_out = time.monotonic() > deadline or stop_is_old(args)
        if failed or timed_out:
            if failed:
                for rank, status in failed:
                    print("train_ddp: rank {} exited with status {}".format(rank, exit_status(status)),
                          file=sys.stderr)
            stopped = [index for index, status in enumerate(statuses) if status is None]
            if not failed:
                if time.monotonic() > deadline:
                    print("train_ddp: ranks still running after {} s, stopping them; their "
                          "stacks:".format(timeout_s), file=sys.stderr)
                else:
                    print("train_ddp: a rank stopped for good {} s ago (--end-after-stop), "
                          "stopping the ranks; their stacks:".format(args.end_after_stop),
                          file=sys.stderr)
                print_stacks([processes[index] for index in stopped])
            for index in stopped:
                stop(processes[index])
            for index in stopped:
                statuses[index] = poll_status(processes[index], wait=True)
                # Said, so that whoever reads how a rank ended knows the launcher ended it.
                print("train_ddp: rank {} stopped by the launcher, status {}".format(
                    index, exit_status(statuses[index])), file=sys.stderr)
            return exit_status(failed[0][1]) if failed else 1
        time.sleep(0.02)
    return 0


def launch_exec(args, port):
    processes = []
    for rank in range(args.world_size):
        environment = dict(os.environ)
        environment.update(rank_environment(rank, args.world_size, port))
        command = [sys.executable, os.path.abspath(__file__)] + worker_argv(args)
        processes.append(subprocess.Popen(command, env=environment))
    write_launcher_file(args, port, [process.pid for process in processes])

    def poll_status(process, wait=False):
        return process.wait() if wait else process.poll()

    return wait_for_processes(args, processes, poll_status, lambda process: process.terminate())


def launch_spawn(args, port):
    context = torch.multiprocessing.spawn(spawned_rank, args=(args,), nprocs=args.world_size,
                                          join=False)
    write_launcher_file(args, port, [process.pid for process in context.processes])
    deadline = time.monotonic() + args.timeout
    try:
        while not context.join(timeout=0.5):
            if time.monotonic() > deadline:
                print("train_ddp: ranks still running after {} s, stopping them; their stacks:".format(
                    args.timeout), file=sys.stderr)
                print_stacks([process for process in context.processes if process.is_alive()])
                for process in context.processes:
                    if process.is_alive():
                        process.terminate()
                return 1
    except torch.multiprocessing.ProcessExitedException as error:
        print("train_ddp: {}".format(error), file=sys.stderr)
        return exit_status(error.exit_code) or 1
    except torch.multiprocessing.ProcessRaisedException as error:
        print("train_ddp: {}".format(error), file=sys.stderr)
        return 1
    return 0


def launch_fork(args, port):
    context = torch.multiprocessing.get_context("fork")
    processes = [context.Process(target=spawned_rank, args=(rank, args)) for rank in range(args.world_size)]
    for process in processes:
        process.start()
    write_launcher_file(args, port, [process.pid for process in processes])

    def poll_status(process, wait=False):
        process.join(None if wait else 0)
        return process.exitcode

    return wait_for_processes(args, processes, poll_status, lambda process: process.terminate())


def main(argv=None):
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    if args.steps < 0:
        print("train_ddp: --steps must not be negative", file=sys.stderr)
        return 2
    if args.worker:
        end_rank(run_rank(args))

    if args.log_dir:
        os.makedirs(args.log_dir, exist_ok=True)
    # Gloo finds its own address from the host name unless told; keep it on loopback.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    # Distribution builds of torch 2.x (Debian's) lack libuv, which TCPStore asks for by default.
    os.environ.setdefault("USE_LIBUV", "0")
    port = rendezvous_port.free_port(MASTER_ADDR)
    started = time.monotonic()
    if args.launcher == "exec":
        status = launch_exec(args, port)
    else:
        os.environ["MASTER_ADDR"] = MASTER_ADDR
        os.environ["MASTER_PORT"] = str(port)
        os.environ["WORLD_SIZE"] = str(args.world_size)
        launch = launch_spawn if args.launcher == "spawn" else launch_fork
        status = launch(args, port)
    print("train_ddp: {} ranks ({} launcher) finished with status {} in {:.1f} s".format(
        args.world_size, args.launcher, status, time.monotonic() - started))
    return status


if __name__ == "__main__":
    sys.exit(main())
