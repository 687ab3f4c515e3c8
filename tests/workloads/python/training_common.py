"""Shared pieces of the reference training workloads (train_cpu.py, train_ddp.py).

The workloads are the independent truth for tests that trace Python API calls
from outside the process: every torch call the training loop makes is written
to a JSON Lines log by the workload itself, together with every nn.Module
invocation seen through forward pre-hooks and forward hooks.

This module holds:

* ``ThreeLayerMLP``: the small model both workloads train;
* ``CallLog``: the per-process JSON Lines log (format in README.md);
* ``qualified_name`` / ``code_chain``: how a called function is named, resolved
  at run time from the function object itself, so the names are exact for the
  installed torch;
* the command-line options both workloads share, the wait file and the
  progress file.

Only the standard library and torch are used.
"""

import argparse
import collections
import json
import os
import sys
import threading
import time
import types

import torch
from torch import nn

INPUT_FEATURES = 16
HIDDEN_FEATURES = 32
OUTPUT_FEATURES = 4

# How deep code_chain() follows decorators before giving up.
MAX_WRAPPER_DEPTH = 8


class ThreeLayerMLP(nn.Module):
    """A 3-layer perceptron: Linear, ReLU, Linear, ReLU, Linear."""

    def __init__(self, input_features=INPUT_FEATURES, hidden_features=HIDDEN_FEATURES):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(input_features, hidden_features),
            nn.ReLU(),
            nn.Linear(hidden_features, hidden_features),
            nn.ReLU(),
            nn.Linear(hidden_features, OUTPUT_FEATURES),
        )

    def forward(self, features):
        return self.layers(features)


def qualified_name(function):
    """``module.qualname`` of a function object, as Python itself names it."""
    module = getattr(function, "__module__", None)
    qualname = getattr(function, "__qualname__", None) or getattr(function, "__name__", repr(function))
    return "{}.{}".format(module, qualname) if module else qualname


def _code_description(function):
    code = function.__code__
    return {
        "qualname": getattr(code, "co_qualname", function.__qualname__),
        "name": code.co_name,
        "file": code.co_filename,
        "line": code.co_firstlineno,
    }


def _inner_function(function):
    """The function a decorator's wrapper calls, or None.

    Follows ``__wrapped__`` (functools.wraps) first, then a closure cell holding
    exactly one function (decorators that do not use functools.wraps, such as
    torch 1.13's ``_use_grad_for_differentiable``).
    """
    wrapped = getattr(function, "__wrapped__", None)
    if isinstance(wrapped, types.FunctionType):
        return wrapped
    closure = getattr(function, "__closure__", None) or ()
    inner = []
    for cell in closure:
        try:
            content = cell.cell_contents
        except ValueError:  # empty cell
            continue
        if isinstance(content, types.FunctionType):
            inner.append(content)
    return inner[0] if len(inner) == 1 else None


def code_chain(function):
    """The code objects a call of ``function`` runs, outermost wrapper first.

    Each entry is {"qualname", "name", "file", "line"}, read from the code
    object (``co_qualname`` on Python 3.11+), i.e. what a probe on the frame
    evaluator sees. Built-in (C) functions have no code: the list is empty.
    """
    function = getattr(function, "__func__", function)
    chain = []
    while isinstance(function, types.FunctionType) and len(chain) < MAX_WRAPPER_DEPTH:
        chain.append(_code_description(function))
        function = _inner_function(function)
    return chain


def caller_names(frame, limit=8):
    """Code names (co_qualname, co_name before 3.11) of frame and its callers, innermost first."""
    names = []
    while frame is not None and len(names) < limit:
        names.append(getattr(frame.f_code, "co_qualname", frame.f_code.co_name))
        frame = frame.f_back
    return names


def monotonic_ns():
    """CLOCK_MONOTONIC in nanoseconds, the clock bpf_ktime_get_ns() reads."""
    return time.monotonic_ns()


class CallLog:
    """JSON Lines log of the API calls and module invocations of one process.

    Records are kept in memory in the order their calls started and written
    out by flush() (once per step), so an API call's record, which carries its
    end time, still comes before the records of the module invocations nested
    in it. Writing happens from the thread that runs the training loop only.
    """

    def __init__(self, path, rank, world_size):
        self.rank = rank
        self.world_size = world_size
        self.step = None
        self.stage = "setup"
        self._pid = os.getpid()
        self._file = open(path, "w", encoding="utf-8") if path else None
        self._pending = []
        self._sequence = 0
        self._module_depth = 0
        self.api_counts = collections.Counter()
        self.call_counts = collections.Counter()
        self.module_invocations = collections.Counter()

    def _new_record(self, kind):
        record = {
            "seq": self._sequence,
            "kind": kind,
            "step": self.step,
            "stage": self.stage,
            "rank": self.rank,
            "world_size": self.world_size,
            "pid": self._pid,
            "tid": threading.get_native_id(),
            "ts_ns": monotonic_ns(),
        }
        self._sequence += 1
        self._pending.append(record)
        return record

    def begin(self, call, function, scope=None, arguments=None):
        """Record the start of an API call; returns the record for end().

        ``call`` is the call as the script writes it, ``function`` the function
        object that is actually called (resolved by the caller at run time),
        ``scope`` the torch record_function name the call opens, if any,
        ``arguments`` the primitive arguments passed by name ({"lr": 0.05}).
        The record keeps the calling frames' code names too.
        """
        record = self._new_record("api")
        api = qualified_name(function)
        record.update({
            "api": api,
            "call": call,
            "code": code_chain(function),
            "scope": scope,
            "args": dict(arguments or {}),
            "callers": caller_names(sys._getframe(1)),
            "grad_enabled": torch.is_grad_enabled(),
            "end_ns": None,
        })
        self.api_counts[api] += 1
        self.call_counts[call] += 1
        return record

    def end(self, record):
        record["end_ns"] = monotonic_ns()

    def module_event(self, phase, name, module):
        """Record a module invocation's enter (pre-hook) or exit (hook)."""
        if phase == "exit":
            self._module_depth -= 1
        module_type = type(module)
        record = self._new_record("module")
        record.update({
            "phase": phase,
            "name": name,
            "class": module_type.__qualname__,
            "class_module": module_type.__module__,
            "forward": qualified_name(module_type.forward),
            "depth": self._module_depth,
            "training": module.training,
            "grad_enabled": torch.is_grad_enabled(),
        })
        if phase == "enter":
            self._module_depth += 1
            self.module_invocations[name] += 1

    def flush(self):
        if self._file is not None:
            for record in self._pending:
                self._file.write(json.dumps(record, sort_keys=True) + "\n")
            self._file.flush()
        self._pending = []

    def write_summary(self, steps, **extra):
        self.flush()
        summary = {
            "summary": True,
            "kind": "summary",
            "steps": steps,
            "rank": self.rank,
            "world_size": self.world_size,
            "pid": self._pid,
            "api_calls": sum(self.api_counts.values()),
            "api_counts": dict(self.api_counts),
            "call_counts": dict(self.call_counts),
            "module_invocations": dict(self.module_invocations),
            "python": "{}.{}.{}".format(*sys.version_info[:3]),
            "torch": torch.__version__,
        }
        summary.update(extra)
        if self._file is not None:
            self._file.write(json.dumps(summary, sort_keys=True) + "\n")
            self._file.flush()
        return summary

    def close(self):
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None


def register_module_hooks(model, call_log):
    """Forward pre-hooks and forward hooks on every submodule of ``model``.

    Names are those of ``model.named_modules()`` ("" is ``model`` itself). The
    hooks are plain functions (closures), so on CPython 3.11+ the interpreter
    calls them inline from Module._call_impl.
    """
    handles = []
    for name, module in model.named_modules():
        def on_enter(hooked_module, inputs, module_name=name):
            call_log.module_event("enter", module_name, hooked_module)

        def on_exit(hooked_module, inputs, output, module_name=name):
            call_log.module_event("exit", module_name, hooked_module)

        handles.append(module.register_forward_pre_hook(on_enter))
        handles.append(module.register_forward_hook(on_exit))
    return handles


# The scope the tracer gives the backward pass: the autograd engine's execute(), entry to return.
BACKWARD_SCOPE = "Autograd.backward#Engine.execute"


def optimizer_scopes(optimizer):
    """The record_function names torch 1.13 opens in zero_grad() and step().

    zero_grad's is read from the optimizer (torch stores it in
    ``_zero_grad_profile_name``); step's is built by the wrapper torch installs
    on the optimizer class (marked ``hooked``) as "Optimizer.step#<class>.step".
    """
    zero_grad_scope = getattr(optimizer, "_zero_grad_profile_name", None)
    step_scope = None
    if getattr(type(optimizer).step, "hooked", False):
        step_scope = "Optimizer.step#{}.step".format(type(optimizer).__name__)
    return zero_grad_scope, step_scope


def add_training_options(parser):
    """Options shared by train_cpu.py and train_ddp.py."""
    parser.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    parser.add_argument("--optimizer", choices=("sgd", "adam"), default="sgd",
                        help="optimizer (default sgd, with momentum 0.9)")
    parser.add_argument("--lr", type=float, default=0.05, help="learning rate (default 0.05)")
    parser.add_argument("--batch-size", type=int, default=8, help="samples per step (default 8)")
    parser.add_argument("--seed", type=int, default=1234, help="random seed (default 1234)")
    parser.add_argument("--clip", type=float, default=None, metavar="MAX_NORM",
                        help="call torch.nn.utils.clip_grad_norm_(params, MAX_NORM) each step")
    parser.add_argument("--clip-only-rank", default=None, metavar="R:K",
                        help="with --clip: from step K on, only rank R clips its gradients "
                             "(a silent error: the ranks' updates differ)")
    parser.add_argument("--eval-every", type=int, default=0, metavar="K",
                        help="every K steps: model.eval(), a no-grad forward, model.train() (0: never)")
    parser.add_argument("--step-sleep-ms", type=float, default=0.0, metavar="M",
                        help="sleep M milliseconds after each step")
    parser.add_argument("--wait-file", default=None, metavar="PATH",
                        help="before the first logged call, wait until PATH exists")
    parser.add_argument("--wait-timeout", type=float, default=300.0, metavar="SECONDS",
                        help="give up waiting for --wait-file after SECONDS (exit 3; default 300)")
    parser.add_argument("--input-features", type=positive_int, default=INPUT_FEATURES,
                        help="model input width (default {})".format(INPUT_FEATURES))
    parser.add_argument("--hidden-features", type=positive_int, default=HIDDEN_FEATURES,
                        help="hidden layer width (default {}); 784 and 1024 with --batch-size "
                             "128 make a benchmark-sized step".format(HIDDEN_FEATURES))
    parser.add_argument("--no-module-hooks", action="store_true",
                        help="register no module hooks (no module records; Module._call_impl "
                             "then takes its no-hook fast path)")
    return parser


def positive_int(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def write_progress(path, value):
    """Atomically replace ``path`` with ``value`` and a newline."""
    if not path:
        return
    temporary = "{}.tmp.{}".format(path, os.getpid())
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write("{}\n".format(value))
    os.replace(temporary, path)


def wait_for_file(path, timeout_s):
    """Poll every 10 ms until ``path`` exists; False on timeout."""
    if not path:
        return True
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def parameter_checksum(model):
    """Three float64 sums over all parameters: plain, squared, position-weighted."""
    with torch.no_grad():
        flat = torch.cat([parameter.detach().reshape(-1) for parameter in model.parameters()]).double()
        weights = torch.arange(1, flat.numel() + 1, dtype=torch.float64)
        return torch.stack([flat.sum(), (flat * flat).sum(), (flat * weights).sum()])


def set_up_model_and_data(call_log, args, data_seed):
    """The seeded model and the random data; every torch call is logged.

    Returns (model, inputs, targets): inputs[s], targets[s] are step s's batch,
    the last batch is the evaluation batch.
    """
    record = call_log.begin("torch.manual_seed(seed)", torch.manual_seed)
    torch.manual_seed(args.seed)
    call_log.end(record)

    record = call_log.begin("ThreeLayerMLP()", ThreeLayerMLP.__init__)
    model = ThreeLayerMLP(args.input_features, args.hidden_features)
    call_log.end(record)

    record = call_log.begin("torch.manual_seed(data_seed)", torch.manual_seed)
    torch.manual_seed(data_seed)
    call_log.end(record)

    shape = (args.steps + 1, args.batch_size)
    record = call_log.begin("torch.randn(inputs_shape)", torch.randn)
    inputs = torch.randn(*shape, args.input_features)
    call_log.end(record)

    record = call_log.begin("torch.randn(targets_shape)", torch.randn)
    targets = torch.randn(*shape, OUTPUT_FEATURES)
    call_log.end(record)
    return model, inputs, targets


def build_optimizer(call_log, args, model):
    """model.parameters() and the optimizer's construction, both logged."""
    record = call_log.begin("model.parameters()", type(model).parameters)
    parameters = list(model.parameters())
    call_log.end(record)

    optimizer_type = torch.optim.Adam if args.optimizer == "adam" else torch.optim.SGD
    arguments = {"lr": args.lr} if args.optimizer == "adam" else {"lr": args.lr, "momentum": 0.9}
    record = call_log.begin("{}(parameters)".format(optimizer_type.__qualname__), optimizer_type.__init__,
                            arguments=arguments)
    if args.optimizer == "adam":
        optimizer = torch.optim.Adam(parameters, lr=args.lr)
    else:
        optimizer = torch.optim.SGD(parameters, lr=args.lr, momentum=0.9)
    call_log.end(record)
    return optimizer, parameters


def clips_at(args, rank, step):
    """Whether this rank clips at this step (--clip-only-rank R:K stops the others at K)."""
    only = getattr(args, "clip_only_rank", None)
    if not only:
        return True
    only_rank, from_step = (int(part) for part in only.split(":"))
    return step < from_step or rank == only_rank


def train(call_log, args, model, optimizer, parameters, inputs, targets, progress_path, forward_scope=None,
          before_backward=None):
    """The training loop both workloads run; returns the last loss.

    ``model`` is what the loop calls (the DistributedDataParallel wrapper in
    train_ddp.py); ``forward_scope`` the record_function name its forward opens.
    ``before_backward(step)``, when given, runs before each backward pass (a
    fault train_ddp.py injects). Every call's function is resolved from the
    object's type at run time.
    """
    zero_grad_scope, step_scope = optimizer_scopes(optimizer)
    evaluation_batch = inputs[-1]
    loss = None

    record = call_log.begin("model.train()", type(model).train)
    model.train()
    call_log.end(record)
    call_log.flush()

    for step in range(args.steps):
        call_log.step = step
        call_log.stage = "train"
        batch, target = inputs[step], targets[step]

        record = call_log.begin("optimizer.zero_grad()", type(optimizer).zero_grad, zero_grad_scope)
        optimizer.zero_grad()
        call_log.end(record)

        record = call_log.begin("model(batch)", type(model).__call__, forward_scope)
        output = model(batch)
        call_log.end(record)

        record = call_log.begin("torch.nn.functional.mse_loss(output, target)",
                                torch.nn.functional.mse_loss)
        loss = torch.nn.functional.mse_loss(output, target)
        call_log.end(record)

        if before_backward:
            before_backward(step)

        record = call_log.begin("loss.backward()", type(loss).backward, BACKWARD_SCOPE)
        loss.backward()
        call_log.end(record)

        if args.clip is not None and clips_at(args, call_log.rank, step):
            record = call_log.begin("torch.nn.utils.clip_grad_norm_(parameters, clip)",
                                    torch.nn.utils.clip_grad_norm_, arguments={"max_norm": args.clip})
            torch.nn.utils.clip_grad_norm_(parameters, args.clip)
            call_log.end(record)

        record = call_log.begin("optimizer.step()", type(optimizer).step, step_scope)
        optimizer.step()
        call_log.end(record)

        if args.eval_every and (step + 1) % args.eval_every == 0:
            call_log.stage = "eval"
            record = call_log.begin("model.eval()", type(model).eval)
            model.eval()
            call_log.end(record)

            with torch.no_grad():
                record = call_log.begin("model(evaluation_batch)", type(model).__call__, forward_scope)
                model(evaluation_batch)
                call_log.end(record)

            record = call_log.begin("model.train()", type(model).train)
            model.train()
            call_log.end(record)

        call_log.flush()
        write_progress(progress_path, step)
        if args.step_sleep_ms > 0:
            time.sleep(args.step_sleep_ms / 1000.0)

    call_log.step = None
    call_log.stage = "teardown"
    return None if loss is None else loss.item()
