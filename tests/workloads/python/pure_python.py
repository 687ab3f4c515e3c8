#!/usr/bin/env python3
"""Pure-Python workload whose methods are called from C, logging every call.

A reference workload for tracing Python calls from outside the process with a
probe on CPython's frame evaluator. Since CPython 3.11 a Python-to-Python call
runs in the caller's evaluator loop ("inlined") and only a call that arrives
from C code enters the evaluator anew. This script calls the methods of a small
class hierarchy through C on purpose: map(), sorted(key=...),
functools.reduce(), operator.methodcaller(), a type call, getattr() on a
property and threading.Thread(target=...). Each logged method records its own
call (qualname, module, file, first line, argument values) on entry, so the log
is the truth to compare a trace with. A few direct Python-to-Python calls are
logged too, marked "entered_from": "python".

Standard library only; runs on CPython 3.8 to 3.13. Format and options:
README.md.

    python3 tests/workloads/python/pure_python.py --iterations 10 --log /tmp/pure.jsonl
"""

import argparse
import functools
import json
import operator
import os
import sys
import threading
import time

# What the dispatcher is about to do; read by the logged methods. Set only by
# the main thread, before each dispatch (the thread dispatch is joined before
# the next one starts).
_dispatch = {"via": None, "iteration": None}


class CallRecorder:
    """Collects the calls of the logged functions, in order, from any thread."""

    def __init__(self):
        self._lock = threading.Lock()
        self._sequence = 0
        self._pending = []
        self._functions_by_code = {}
        self.records_total = 0
        self.counts = {}
        self.entered_from_counts = {"c": 0, "python": 0}
        self.raised_total = 0
        self._pid = os.getpid()

    def register_class(self, cls):
        """Log calls of the functions defined in ``cls`` (methods, properties, ...)."""
        for attribute in vars(cls).values():
            if isinstance(attribute, (staticmethod, classmethod)):
                attribute = attribute.__func__
            elif isinstance(attribute, property):
                attribute = attribute.fget
            code = getattr(attribute, "__code__", None)
            if code is not None:
                self._functions_by_code[code] = attribute

    def record_entry(self, frame):
        """Record the call whose frame is ``frame``; returns the record."""
        code = frame.f_code
        function = self._functions_by_code[code]
        caller = frame.f_back
        # A call made straight from a method of the hierarchy, or one the
        # dispatcher marks "direct_call", is a Python-to-Python call; the others
        # were made by C code (map, sorted, Thread.run's call of its target, ...).
        direct = (caller is not None and caller.f_code in self._functions_by_code) \
            or _dispatch["via"] == "direct_call"
        parameter_count = code.co_argcount + code.co_kwonlyargcount
        local_values = frame.f_locals
        arguments = [describe_value(name, local_values[name]) for name in code.co_varnames[:parameter_count]]
        record = {
            "kind": "call",
            "iteration": _dispatch["iteration"],
            "via": "direct_call" if direct else _dispatch["via"],
            "entered_from": "python" if direct else "c",
            "qualname": function.__qualname__,
            "module": function.__module__,
            "file": code.co_filename,
            "line": code.co_firstlineno,
            "args": arguments,
            "callers": caller_names(caller),
            "raised": False,
            "pid": self._pid,
            "tid": threading.get_native_id(),
            "thread": threading.current_thread().name,
            "ts_ns": time.monotonic_ns(),
        }
        with self._lock:
            record["seq"] = self._sequence
            self._sequence += 1
            self._pending.append(record)
        return record

    def take_pending(self):
        with self._lock:
            pending, self._pending = self._pending, []
        for record in pending:
            self.records_total += 1
            self.counts[record["qualname"]] = self.counts.get(record["qualname"], 0) + 1
            self.entered_from_counts[record["entered_from"]] += 1
            self.raised_total += 1 if record["raised"] else 0
        return pending


def caller_names(frame, limit=8):
    """The code names of ``frame`` and the frames that called it, innermost first.

    co_qualname on 3.11+, co_name on 3.10 (whose code objects have no qualname).
    """
    names = []
    while frame is not None and len(names) < limit:
        names.append(getattr(frame.f_code, "co_qualname", frame.f_code.co_name))
        frame = frame.f_back
    return names


def describe_value(name, value):
    """An argument as JSON: primitives by value, anything else as null plus its type."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"name": name, "value": value, "type": type(value).__name__}
    return {"name": name, "value": None, "type": type(value).__name__}


recorder = CallRecorder()


def _record_call():
    """Record the call of the function that calls this one."""
    return recorder.record_entry(sys._getframe(1))


class Shape:
    """Base of the hierarchy."""

    def __init__(self, label, note):
        _record_call()
        self.label = label
        self.note = note

    def sort_key(self):
        _record_call()
        return (self.area_value(), self.label)

    def area_value(self):
        return 0.0

    def describe(self, prefix, suffix):
        _record_call()
        text = "{}:{}".format(prefix, self.label)
        return text if suffix is None else text + suffix

    def check_limit(self, limit):
        record = _record_call()
        if self.area_value() > limit:
            record["raised"] = True
            raise ValueError("area {} exceeds {}".format(self.area_value(), limit))
        return True


class Rectangle(Shape):
    def __init__(self, width, height, label):
        _record_call()
        super().__init__(label, None)
        self.width = width
        self.height = height

    @property
    def area(self):
        _record_call()
        return self.width * self.height

    def area_value(self):
        return float(self.width * self.height)

    def scaled_area(self, factor):
        _record_call()
        return self.area_value() * factor

    def perimeter(self):
        _record_call()
        return 2 * (self.width + self.height)


class Square(Rectangle):
    def __init__(self, side):
        _record_call()
        super().__init__(side, side, "square")

    @classmethod
    def parse_side(cls, text):
        _record_call()
        return int(text)


class AreaTally:
    """functools.reduce callback holder."""

    def add_area(self, total, shape):
        _record_call()
        return total + shape.area_value()


class Inspector:
    """A callable object, called through operator.methodcaller("__call__", ...)."""

    def __call__(self, shape, verbose):
        _record_call()
        return shape.label if verbose else None


class ThreadJob:
    """Holds the target of a threading.Thread."""

    def __init__(self):
        self.result = None

    def run(self, iteration, name, weight, enabled, nothing, shape):
        _record_call()
        self.result = (iteration, name, weight * shape.area_value(), enabled, nothing)


for _logged_class in (Shape, Rectangle, Square, AreaTally, Inspector, ThreadJob):
    recorder.register_class(_logged_class)


def _set_dispatch(via):
    _dispatch["via"] = via


def run_iteration(iteration):
    """One iteration: every kind of call through C, plus a few direct calls."""
    _dispatch["iteration"] = iteration
    side = iteration % 4 + 1

    _set_dispatch("type_call_map")  # map() calls the class: type.__call__ -> __init__
    squares = list(map(Square, [side, side + 1]))
    # Square.__init__ calls Rectangle.__init__ and Shape.__init__ directly.

    _set_dispatch("sorted_key")
    ordered = sorted(squares + [squares[0]], key=Shape.sort_key)

    _set_dispatch("reduce")
    total_area = functools.reduce(AreaTally().add_area, ordered, 0.5)

    _set_dispatch("methodcaller")
    description = operator.methodcaller("describe", "it\u00e9{}".format(iteration), None)(squares[0])

    _set_dispatch("methodcaller_call")
    inspected = operator.methodcaller("__call__", squares[1], iteration % 2 == 0)(Inspector())

    _set_dispatch("getattr_property")
    area = getattr(squares[1], "area")

    _set_dispatch("map")
    scaled = list(map(squares[0].scaled_area, [0.5, 2.25]))

    _set_dispatch("map_classmethod")
    parsed = list(map(Square.parse_side, [str(side)]))

    _set_dispatch("map_raises")
    raised = False
    try:
        list(map(squares[1].check_limit, [1000, 2 ** 62 + 5, -1]))
    except ValueError:
        raised = True
    if not raised:
        raise AssertionError("check_limit(-1) did not raise")

    _set_dispatch("thread_target")
    job = ThreadJob()
    worker = threading.Thread(target=job.run, name="pure-python-worker",
                              args=(iteration, "job-\u00e9\u20ac-{}-long-enough-to-be-cut".format(iteration),
                                    0.25, True, None, squares[0]))
    worker.start()
    worker.join()

    _set_dispatch("direct_call")
    perimeter = squares[0].perimeter()  # a Python-to-Python call
    _set_dispatch(None)

    return (total_area, description, inspected, area, scaled, parsed, job.result, perimeter)



def write_progress(path, value):
    """Atomically replace ``path`` with ``value`` and a newline."""
    if not path:
        return
    temporary = "{}.tmp.{}".format(path, os.getpid())
    with open(temporary, "w") as handle:
        handle.write("{}\n".format(value))
    os.replace(temporary, path)


def wait_for_file(path, timeout_s):
    if not path:
        return True
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def parse_arguments(argv):
    parser = argparse.ArgumentParser(
        description="Call methods of a small class hierarchy through C (map, sorted, reduce, "
                    "methodcaller, type call, getattr, Thread) and log every call.",
        epilog="example: %(prog)s --iterations 10 --log /tmp/pure.jsonl")
    parser.add_argument("--iterations", type=int, default=10, help="iterations (default 10)")
    parser.add_argument("--log", default=None, metavar="PATH", help="JSON Lines log to write")
    parser.add_argument("--sleep-ms", type=float, default=0.0, metavar="M",
                        help="sleep M milliseconds after each iteration")
    parser.add_argument("--wait-file", default=None, metavar="PATH",
                        help="before the first iteration, wait until PATH exists")
    parser.add_argument("--wait-timeout", type=float, default=300.0, metavar="SECONDS",
                        help="give up waiting for --wait-file after SECONDS (exit 3; default 300)")
    parser.add_argument("--progress", default=None, metavar="PATH",
                        help="file rewritten (temp file + rename) with the last finished iteration; "
                             "-1 before waiting for --wait-file")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    if args.iterations < 0:
        print("pure_python: --iterations must not be negative", file=sys.stderr)
        return 2
    write_progress(args.progress, -1)
    if not wait_for_file(args.wait_file, args.wait_timeout):
        print("pure_python: {} did not appear within {} s".format(args.wait_file, args.wait_timeout),
              file=sys.stderr)
        return 3

    log_file = open(args.log, "w") if args.log else None
    python_version = "{}.{}.{}".format(*sys.version_info[:3])
    try:
        for iteration in range(args.iterations):
            run_iteration(iteration)
            for record in recorder.take_pending():
                record["python"] = python_version
                if log_file is not None:
                    log_file.write(json.dumps(record, sort_keys=True) + "\n")
            if log_file is not None:
                log_file.flush()
            write_progress(args.progress, iteration)
            if args.sleep_ms > 0:
                time.sleep(args.sleep_ms / 1000.0)
        summary = {
            "summary": True,
            "kind": "summary",
            "iterations": args.iterations,
            "calls": recorder.records_total,
            "counts": recorder.counts,
            "entered_from": recorder.entered_from_counts,
            "raised": recorder.raised_total,
            "pid": os.getpid(),
            "python": python_version,
            "executable": sys.executable,
        }
        if log_file is not None:
            log_file.write(json.dumps(summary, sort_keys=True) + "\n")
    finally:
        if log_file is not None:
            log_file.close()
    print("pure_python: {} iterations, {} calls logged ({} entered from C), python {}".format(
        args.iterations, recorder.records_total, recorder.entered_from_counts["c"], python_version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
