#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes tests/traincheck/ddp-excerpt/: a small trace in TrainCheck's JSON
Lines format (trace_API_<pid>_<tid>.log, trace_VAR_<pid>_<tid>.log) of a
2-rank data-parallel training loop, whose invariants are known by
construction (README.md there lists them). Deterministic: run it again to
regenerate the same files.

    python3 tests/traincheck/make-excerpt.py [FOLDER]
"""
import json
import os
import sys

RANKS = 2
STEPS = 12
LEARNING_RATE = 0.01
MOMENTUM = 0.9
PIDS = [4101, 4102]
TID = 139700000000001


def typed(value):
    """TrainCheck's typed value: {"int": 5}, {"NoneType": null}..."""
    if value is None:
        return {"NoneType": None}
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        return {"float": value}
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, tuple):
        return {"tuple": list(value)}
    return {type(value).__name__: {}}


class Rank:
    def __init__(self, rank):
        self.rank = rank
        self.pid = PIDS[rank]
        self.time = 1_000_000_000 + rank * 1_000
        self.calls = 0
        self.api = []
        self.var = []
        self.step = 0
        self.stage = "init"

    def meta(self):
        meta = {"step": self.step, "stage": self.stage}
        if self.stage != "init" or self.calls > 2:
            meta["_DATA_PARALLEL_RANK"] = self.rank
        return meta

    def tick(self, ns=1_000):
        self.time += ns
        return self.time

    def call(self, function, args=(), kwargs=None, returns=None, inner=None):
        self.calls += 1
        call_id = "%032x_%d" % (self.pid, self.calls)
        common = {"func_call_id": call_id, "thread_id": TID, "process_id": self.pid,
                  "meta_vars": self.meta()}
        self.api.append({**common, "type": "function_call (pre)", "function": function,
                         "is_bound_method": False, "obj_id": None,
                         "args": {str(i): typed(a) for i, a in enumerate(args)},
                         "kwargs": {k: typed(v) for k, v in (kwargs or {}).items()},
                         "time": self.tick()})
        if inner:
            inner()
        common["meta_vars"] = self.meta()
        self.api.append({**common, "type": "function_call (post)", "function": function,
                         "is_bound_method": False, "obj_id": None,
                         "return_values": typed(returns), "time": self.tick(5_000)})

    def state(self, name, data, grad, shape):
        self.var.append({"var_name": name, "var_type": "torch.nn.Parameter",
                         "process_id": self.pid, "thread_id": TID, "meta_vars": self.meta(),
                         "type": "state_change",
                         "attributes": {"_ML_DAIKON_data_ID": 140000000000000 + self.pid,
                                        "data": data, "dtype": "torch.float32", "grad": grad,
                                        "is_cuda": False, "requires_grad": True,
                                        "shape": list(shape)},
                         "time": self.tick()})


def run(rank):
    r = Rank(rank)
    r.call("torch.cuda.set_device", (rank,))
    r.call("torch.distributed.distributed_c10d.init_process_group", ("nccl",),
           {"world_size": RANKS, "rank": rank})
    r.call("torch.distributed.distributed_c10d.get_world_size", returns=RANKS)
    r.call("torch.distributed.distributed_c10d.get_rank", returns=rank)
    r.state("model.fc.weight", 7_000, None, (4, 8))
    r.state("model.fc.bias", 7_001, None, (4,))
    r.stage = "training"
    for step in range(STEPS):
        r.step = step
        r.call("torch.optim.optimizer.Optimizer.zero_grad", kwargs={"set_to_none": True})
        r.call("torch.nn.modules.module.Module._call_impl",
               inner=lambda: r.call("torch.nn.modules.linear.Linear.forward"))
        # Each rank sees its own batch: the loss differs across ranks.
        r.call("torch.nn.functional.mse_loss", kwargs={"reduction": "mean"})
        r.call("torch._tensor.Tensor.backward", kwargs={"retain_graph": False},
               inner=lambda: r.call("torch.distributed.distributed_c10d.all_reduce",
                                    kwargs={"async_op": True}))
        r.call("torch.optim.sgd.SGD.step",
               inner=lambda: r.call("torch.optim.sgd.sgd",
                                    kwargs={"lr": LEARNING_RATE, "momentum": MOMENTUM,
                                            "nesterov": False, "maximize": False}))
        r.call("torch.is_grad_enabled", returns=True)
        # Parameters stay equal across ranks after every update (the all-reduce).
        r.state("model.fc.weight", 8_000 + step, 9_000 + step, (4, 8))
        r.state("model.fc.bias", 8_500 + step, 9_500 + step, (4,))
    return r


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    folder = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "ddp-excerpt")
    os.makedirs(folder, exist_ok=True)
    for rank in range(RANKS):
        r = run(rank)
        for kind, records in (("API", r.api), ("VAR", r.var)):
            with open(os.path.join(folder, "trace_%s_%d_%d.log" % (kind, r.pid, TID)), "w") as out:
                for record in records:
                    out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
