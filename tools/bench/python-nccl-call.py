"""Times ncclAllReduce(send, recv, 1, ncclFloat32, ncclSum, comm, NULL) made
through ctypes from a Python function five frames deep: the cost a traced
NCCL call adds when its Python caller is walked, against the same calls
untraced. Prints one line of key=value pairs: ns_per_call (median of the
rounds' means), ns_per_call_min, calls.

usage: python3 python-nccl-call.py LIBRARY [--calls N] [--rounds R] [--ready FILE --go FILE]
"""
import argparse
import ctypes
import os
import statistics
import time


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def timed_round(lib, send, recv, comm, calls):
    all_reduce = lib.ncclAllReduce
    start = time.perf_counter_ns()
    for _ in range(calls):
        all_reduce(send, recv, ctypes.c_size_t(1), 7, 0, comm, None)
    return (time.perf_counter_ns() - start) / calls


def nested(depth, *args):
    return timed_round(*args) if depth == 0 else nested(depth - 1, *args)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("library")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--ready")
    parser.add_argument("--go")
    options = parser.parse_args()
    lib = ctypes.CDLL(options.library)
    uid, comm = UniqueId(), ctypes.c_void_p()
    if lib.ncclGetUniqueId(ctypes.byref(uid)) or lib.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0):
        raise SystemExit("cannot make a one-rank communicator")
    send, recv = (ctypes.c_float * 1)(), (ctypes.c_float * 1)()
    if options.ready:
        with open(options.ready, "w") as ready:
            ready.write(str(os.getpid()))
    while options.go and not os.path.exists(options.go):
        time.sleep(0.01)
    rounds = []
    for _ in range(options.rounds):
        rounds.append(nested(4, lib, send, recv, comm, options.calls))
        lib.doubleStreamSynchronize(None)
    print(f"ns_per_call={statistics.median(rounds):.0f} ns_per_call_min={min(rounds):.0f} "
          f"calls={options.calls * options.rounds}")


if __name__ == "__main__":
    main()
