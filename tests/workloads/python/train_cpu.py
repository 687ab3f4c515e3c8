#!/usr/bin/python3
"""Single-process CPU training that logs every torch API call it makes.

A reference workload for tracing Python APIs from outside the process: it
trains ThreeLayerMLP (training_common.py) on seeded random data with SGD or
Adam and writes its own JSON Lines log of each API call (qualified name of the
function actually called, resolved at run time) and of each nn.Module
invocation (through forward pre-hooks and hooks), per step. A trace of the same
run can be compared with that log. Format and options: README.md.

    /usr/bin/python3 tests/workloads/python/train_cpu.py --steps 20 --log /tmp/cpu.jsonl
"""

import argparse
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import training_common  # noqa: E402  (after the path set-up above)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        description="Train a 3-layer MLP on CPU and log every torch API call made.",
        epilog="example: %(prog)s --steps 20 --eval-every 5 --clip 1.0 --log /tmp/cpu.jsonl")
    training_common.add_training_options(parser)
    parser.add_argument("--log", default=None, metavar="PATH", help="JSON Lines log to write")
    parser.add_argument("--stall-at-step", type=int, default=None, metavar="K",
                        help="before the backward pass of step K, log a fault record and block "
                             "for good on an event no one sets (a hang outside any collective)")
    parser.add_argument("--progress", default=None, metavar="PATH",
                        help="file rewritten (temp file + rename) with the last finished step; "
                             "-1 once torch is loaded, before waiting for --wait-file")
    return parser.parse_args(argv)


def stall_at(fault_step, call_log):
    """The hook train() runs before each backward pass: blocks for good at 'fault_step'."""
    if fault_step is None:
        return None

    def hook(step):
        if step == fault_step:
            record = call_log._new_record("fault")
            record.update({"fault": "stall", "fault_step": fault_step})
            call_log.flush()
            threading.Event().wait()

    return hook


def main(argv=None):
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    if args.steps < 0:
        print("train_cpu: --steps must not be negative", file=sys.stderr)
        return 2

    training_common.write_progress(args.progress, -1)
    if not training_common.wait_for_file(args.wait_file, args.wait_timeout):
        print("train_cpu: {} did not appear within {} s".format(args.wait_file, args.wait_timeout),
              file=sys.stderr)
        return 3

    call_log = training_common.CallLog(args.log, rank=0, world_size=1)
    try:
        model, inputs, targets = training_common.set_up_model_and_data(call_log, args, data_seed=args.seed)
        if not args.no_module_hooks:
            training_common.register_module_hooks(model, call_log)
        optimizer, parameters = training_common.build_optimizer(call_log, args, model)
        final_loss = training_common.train(call_log, args, model, optimizer, parameters,
                                           inputs, targets, args.progress,
                                           before_backward=stall_at(args.stall_at_step, call_log))
        checksum = training_common.parameter_checksum(model).tolist()
        call_log.write_summary(args.steps, final_loss=final_loss, parameter_checksum=checksum,
                               optimizer=type(optimizer).__qualname__,
                               parameter_tensors=len(parameters))
    finally:
        call_log.close()
    print("train_cpu: {} steps, final loss {}".format(args.steps, final_loss))
    return 0


if __name__ == "__main__":
    sys.exit(main())
