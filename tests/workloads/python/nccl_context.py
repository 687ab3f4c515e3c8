"""NCCL calls made from named Python functions, for checking the Python
caller the tracer attaches to each call.

Loads an NCCL library (the test double) with ctypes, makes a one-rank
communicator and calls ncclAllReduce / ncclBroadcast from functions,
methods and nested classes at several depths, once from a Python thread
other than the main one, and once (ncclGetUniqueId) from a thread that runs
no Python at all. Each collective's count is the call's own number, so a
trace entry finds its log line. Every call is logged as one JSON line:
its function, count, thread and the Python frames that made it, innermost
first, as (file, qualified name) -- co_qualname where the interpreter has
it, co_name on 3.10.

--linger-ms: stay alive this long at the end, as a training process
does after its last collective: the tracer names code objects from the
live process's memory.

--attach-wait FILE: after the first round, keep calling (one round per
10 ms) until FILE exists, so a tracer can attach mid-run; the log is
flushed per call.
"""
import argparse
import ctypes
import json
import os
import sys
import threading
import time

NCCL_FLOAT32 = 7
NCCL_SUM = 0
MAX_COUNT = 1 << 16


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def frame_name(code):
    return getattr(code, "co_qualname", code.co_name)


class Nccl:
    def __init__(self, library, log):
        self.lib = ctypes.CDLL(library)
        self.log = log
        self.lock = threading.Lock()
        self.count = 0
        self.send = (ctypes.c_float * MAX_COUNT)()
        self.recv = (ctypes.c_float * MAX_COUNT)()
        uid = UniqueId()
        self.check(self.lib.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        self.comm = ctypes.c_void_p()
        self.check(self.lib.ncclCommInitRank(ctypes.byref(self.comm), 1, uid, 0),
                   "ncclCommInitRank")

    def check(self, result, name):
        if result != 0:
            raise RuntimeError(f"{name} returned {result}")

    def next_count(self):
        with self.lock:
            self.count += 1
            if self.count >= MAX_COUNT:
                raise RuntimeError("too many calls for the buffers")
            return self.count

    def write(self, function, count, caller):
        stack = []
        frame = caller
        while frame is not None:
            stack.append([frame.f_code.co_filename, frame_name(frame.f_code)])
            frame = frame.f_back
        entry = {"function": function, "count": count, "thread": threading.current_thread().name,
                 "tid": threading.get_native_id(), "stack": stack}
        with self.lock:
            self.log.write(json.dumps(entry) + "\n")
            self.log.flush()

    def synchronize(self):
        self.check(self.lib.doubleStreamSynchronize(None), "doubleStreamSynchronize")


def all_reduce(nccl):
    """A module-level function making the call itself."""
    count = nccl.next_count()
    nccl.check(nccl.lib.ncclAllReduce(nccl.send, nccl.recv, ctypes.c_size_t(count), NCCL_FLOAT32,
                                      NCCL_SUM, nccl.comm, None), "ncclAllReduce")
    nccl.write("ncclAllReduce", count, sys._getframe())


def broadcast(nccl):
    count = nccl.next_count()
    nccl.check(nccl.lib.ncclBroadcast(nccl.send, nccl.recv, ctypes.c_size_t(count), NCCL_FLOAT32,
                                      0, nccl.comm, None), "ncclBroadcast")
    nccl.write("ncclBroadcast", count, sys._getframe())


class Trainer:
    def __init__(self, nccl):
        self.nccl = nccl

    def step(self):
        self.sync_gradients()
        all_reduce(self.nccl)

    def sync_gradients(self):
        count = self.nccl.next_count()
        self.nccl.check(self.nccl.lib.ncclAllReduce(
            self.nccl.send, self.nccl.recv, ctypes.c_size_t(count), NCCL_FLOAT32, NCCL_SUM,
            self.nccl.comm, None), "ncclAllReduce")
        self.nccl.write("ncclAllReduce", count, sys._getframe())

    class Hooks:
        @staticmethod
        def deep(nccl, levels):
            if levels == 0:
                broadcast(nccl)
                return
            Trainer.Hooks.deep(nccl, levels - 1)


def from_python_thread(nccl):
    """The calls of a Python thread other than the main one."""
    trainer = Trainer(nccl)
    trainer.step()


def run_python_thread(nccl):
    worker = threading.Thread(target=from_python_thread, args=(nccl,), name="python-worker")
    worker.start()
    worker.join()


def from_c_thread(nccl):
    """ncclGetUniqueId from a thread created in C: it runs no Python."""
    libc = ctypes.CDLL("libc.so.6")
    uid = UniqueId()
    thread = ctypes.c_ulong(0)
    start = ctypes.cast(nccl.lib.ncclGetUniqueId, ctypes.c_void_p)
    # Both looked up first: ctypes resolves a name in Python (CDLL.__getattr__),
    # and the main thread must be in this function alone while the C thread calls.
    create, join = libc.pthread_create, libc.pthread_join
    if create(ctypes.byref(thread), None, start, ctypes.byref(uid)) != 0:
        raise RuntimeError("pthread_create failed")
    join(thread, None)
    # Logged as made by this function on the main thread: the caller the trace names.
    entry = {"function": "ncclGetUniqueId", "count": None, "thread": "c-thread", "tid": None,
             "stack": [], "main_stack": []}
    frame = sys._getframe()
    while frame is not None:
        entry["main_stack"].append([frame.f_code.co_filename, frame_name(frame.f_code)])
        frame = frame.f_back
    with nccl.lock:
        nccl.log.write(json.dumps(entry) + "\n")
        nccl.log.flush()
    if not any(uid.internal):
        raise RuntimeError("ncclGetUniqueId wrote no id")


def round_of_calls(nccl, trainer):
    all_reduce(nccl)
    trainer.step()
    Trainer.Hooks.deep(nccl, 3)
    Trainer.Hooks.deep(nccl, 9)
    nccl.synchronize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", required=True, help="libnccl.so.2 to load")
    parser.add_argument("--log", required=True, help="JSON Lines log of the calls made")
    parser.add_argument("--attach-wait", help="keep calling until this file exists")
    parser.add_argument("--linger-ms", type=int, default=300, help="stay alive this long at the end")
    parser.add_argument("--ready", help="file written once the first round is done")
    options = parser.parse_args()
    with open(options.log, "w") as log:
        nccl = Nccl(options.library, log)
        trainer = Trainer(nccl)
        round_of_calls(nccl, trainer)
        run_python_thread(nccl)
        from_c_thread(nccl)
        nccl.synchronize()
        if options.ready:
            with open(options.ready, "w") as ready:
                ready.write(str(os.getpid()))
        if options.attach_wait:
            deadline = time.monotonic() + 60
            while not os.path.exists(options.attach_wait) and time.monotonic() < deadline:
                round_of_calls(nccl, trainer)
                time.sleep(0.01)
            run_python_thread(nccl)
            nccl.synchronize()
        nccl.lib.ncclCommDestroy(nccl.comm)
    time.sleep(options.linger_ms / 1000)


if __name__ == "__main__":
    main()
