#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The silent-error suite: reproduced silent errors, each with a buggy and a fixed variant.

For each family of workloads, healthy reference runs (other seeds and lengths
than the cases) are recorded and `tcheck-bpf infer` learns rules from them.
Each case's buggy and fixed variants are then recorded and checked with
`tcheck-bpf check --rules`. The truth is what the workloads logged themselves:
the step a bug took effect is the first step where the buggy run's own log
differs from what its healthy counterpart did (NCCL, DDP) or what the script
says it did (one-process cases). A case is detected when a violation is
reported for the step of the trigger or the next one.

Writes a Markdown table (--markdown) and the results as JSON (--results);
exits 1 when a case is missed or a fixed variant has a violation. Needs root.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The interpreter that runs the workloads (--python): Debian 12's torch 1.13 by default.
PYTHON = ["/usr/bin/python3"]
PY_DIR = os.path.join(ROOT, "tests", "workloads", "python")
NCCL_LAYOUT = ["--ranks", "8", "--tp", "2", "--pp", "1"]
# Torch scopes, two operators and, of the Python frames, the optimizer's constructor only:
# the probes the rules need (selective instrumentation).
TORCH_OPS = ["--torch-op", "add_", "--torch-op", "mul_",
             "--python-filter", "torch.optim.sgd.SGD.__init__"]
# What every training process of a Python trace must hold, or the suite fails (see record()).
PYTHON_EXPECTED = ("Optimizer.step#SGD.step", "torch.optim.sgd.SGD.__init__")
# A call that never completes on the other ranks is a hang: the double's timeout ends the run.
HANG_TIMEOUT_ENV = {"NCCL_DOUBLE_TIMEOUT_MS": "3000"}
COMMUNICATION = {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
                 "ncclBcast", "ncclReduce", "ncclSend", "ncclRecv", "ncclAlltoAll",
                 "ncclGather", "ncclScatter"}

# name, family, what goes wrong, buggy options, fixed options
CASES = [
    ("zero_grad missing", "torch-cpu", "zero_grad() no longer called from step 5",
     ["--bug", "zero-grad"], []),
    ("collective count differs across ranks", "nccl", "rank 3 all-reduces count+1 (8 ranks, tp 2)",
     ["--mismatch-count", "3:7"], []),
    ("collective datatype differs across ranks", "nccl", "rank 3 reduces int32 as uint32",
     ["--mismatch-datatype", "3:7"], []),
    ("collective on the wrong communicator", "nccl", "every rank issues its tp all-reduce on the dp comm",
     ["--wrong-comm", "7"], []),
    ("all-reduce of replicated parameters missing on one rank", "nccl",
     "rank 3 skips one bucket's all-reduce", ["--skip-replicated", "3:7"], []),
    ("optimizer on parameters the model does not use", "torch-cpu",
     "optimizer built on a replaced model's parameters", ["--bug", "unused-params"], []),
    ("gradient clipping on one rank only", "torch-ddp", "from step 5 only rank 0 clips (DDP, 2 ranks)",
     ["--clip-only-rank", "0:5"], []),
    ("layers frozen by mistake", "torch-cpu", "layer 0 frozen from step 5",
     ["--bug", "frozen"], []),
    ("learning rate silently changed", "torch-cpu", "optimizer rebuilt with 10x lr at step 5",
     ["--bug", "lr"], ["--rebuild-at", "5"]),
]


def run(command, env=None, allowed=(0,)):
    environment = dict(os.environ)
    environment.update(env or {})
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=environment, check=False)
    if result.returncode not in allowed:
        raise RuntimeError("{} exited {}: {}".format(" ".join(command), result.returncode,
                                                     result.stderr[-2000:]))
    return result


class Suite:
    def __init__(self, tcheck, work):
        self.tcheck = tcheck
        self.work = work
        self.workload = os.path.join(ROOT, ".output", "tests", "nccl-workload")
        self.rules = {}

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def record(self, name, command, options=(), env=None, allowed=(0,), log_dir=None):
        """Records a command once; a Python recording that lost events fails the suite."""
        trace = self.path(name + ".trace")
        if os.path.exists(trace):  # record refuses to replace a trace
            os.remove(trace)
        result = run([self.tcheck, "--quiet", "record", "-o", trace, *options, "--", *command],
                     env=env, allowed=allowed)
        missing = self.missing_python(trace, log_dir) if "--torch-op" in options else {}
        if missing:
            raise RuntimeError("{}: the trace lacks {}; the recorder said: {}".format(
                name, "; ".join("{} in process {}".format(", ".join(names), pid)
                                for pid, names in sorted(missing.items(), key=str)),
                result.stderr.strip()[-2000:] or "nothing"))
        return trace

    def missing_python(self, trace, log_dir=None):
        """The expected Python events each training process of the trace lacks, by pid.

        The training processes are the ranks the launcher logged (DDP), or else
        every traced Python interpreter that ran a workload script."""
        dump = run([self.tcheck, "dump", trace]).stdout
        seen, commands = {}, {}
        for line in dump.splitlines():
            record = json.loads(line)
            if record.get("kind") == "process":
                commands[record["pid"]] = record.get("command") or ""
            elif record.get("kind") in ("py", "torch_scope", "torch_op"):
                seen.setdefault(record["pid"], set()).add(record["name"])
        if log_dir:
            with open(os.path.join(log_dir, "launcher.json"), encoding="utf-8") as launcher:
                trainers = [rank["pid"] for rank in json.load(launcher)["ranks"]]
        else:
            # The interpreter running a workload script; a shell of the chroot
            # wrapper names the script too, but runs no Python.
            trainers = [pid for pid, command in commands.items()
                        if os.path.join("workloads", "python", "") in command
                        and os.path.basename(command.split(" ", 1)[0]).startswith("python")]
        missing = {pid: [name for name in PYTHON_EXPECTED if name not in seen.get(pid, ())]
                   for pid in trainers}
        if not trainers:
            missing["(none found)"] = list(PYTHON_EXPECTED)
        return {pid: names for pid, names in missing.items() if names}

    def nccl_command(self, name, steps, extra=()):
        return [self.workload, *NCCL_LAYOUT, "--steps", str(steps), "--log-dir",
                self.path(name + "-log"), *extra]

    def ddp_command(self, name, steps, seed, extra=()):
        return [*PYTHON, os.path.join(PY_DIR, "train_ddp.py"), "--world-size", "2", "--steps",
                str(steps), "--seed", str(seed), "--clip", "1.0", "--no-module-hooks",
                "--log-dir", self.path(name + "-log"), *extra]

    def cpu_command(self, name, steps, extra=()):
        return [*PYTHON, os.path.join(PY_DIR, "silent_errors.py"), "--steps", str(steps),
                "--trigger", "5", "--log", self.path(name + ".json"), *extra]

    def infer(self, family):
        """Rules of a family, from its healthy reference runs (inferred once)."""
        if family in self.rules:
            return self.rules[family]
        if family == "nccl":
            traces = [self.record("nccl-reference", self.nccl_command("nccl-reference", 12))]
        elif family == "torch-cpu":
            traces = [self.record("cpu-reference-{}".format(seed),
                                  [*PYTHON, os.path.join(PY_DIR, "train_cpu.py"), "--steps",
                                   str(steps), "--seed", str(seed), "--no-module-hooks"],
                                  TORCH_OPS)
                      for seed, steps in ((3, 8), (5, 6))]
        else:
            traces = [self.record("ddp-reference", self.ddp_command("ddp-reference", 8, 21),
                                  TORCH_OPS, log_dir=self.path("ddp-reference-log"))]
        rules = self.path(family + "-rules.json")
        # Runs of one program (other seeds, lengths, layouts) are one reference program.
        run([self.tcheck, "--quiet", "infer", "-o", rules, ",".join(traces)])
        self.rules[family] = rules
        return rules

    def check(self, rules, trace):
        jsonl = trace + ".violations.jsonl"
        run([self.tcheck, "--quiet", "check", "--rules", rules, "--jsonl", jsonl, trace],
            allowed=(0, 1))
        with open(jsonl, encoding="utf-8") as lines:
            return [json.loads(line) for line in lines if line.strip()]

    def run_case(self, index, case):
        name, family, what, buggy_options, fixed_options = case
        rules = self.infer(family)
        stem = "case{}".format(index)
        if family == "nccl":
            env = HANG_TIMEOUT_ENV if "--skip-replicated" in buggy_options else None
            buggy = self.record(stem + "-buggy", self.nccl_command(stem + "-buggy", 16, buggy_options),
                                env=env, allowed=(0, 1))
            fixed = self.record(stem + "-fixed", self.nccl_command(stem + "-fixed", 16, fixed_options))
            trigger = nccl_trigger(self.path(stem + "-buggy-log"), self.path(stem + "-fixed-log"))
            step_of = nccl_step_finder(self.path(stem + "-buggy-log"))
        elif family == "torch-ddp":
            # The ranks' parameters end up different: train_ddp.py exits 4 saying so.
            buggy = self.record(stem + "-buggy", self.ddp_command(stem + "-buggy", 10, 7, buggy_options),
                                TORCH_OPS, allowed=(0, 4), log_dir=self.path(stem + "-buggy-log"))
            fixed = self.record(stem + "-fixed", self.ddp_command(stem + "-fixed", 10, 7, fixed_options),
                                TORCH_OPS, log_dir=self.path(stem + "-fixed-log"))
            trigger = ddp_clip_trigger(self.path(stem + "-buggy-log"))
            step_of = python_step
        else:
            buggy = self.record(stem + "-buggy", self.cpu_command(stem + "-buggy", 10, buggy_options),
                                TORCH_OPS)
            fixed = self.record(stem + "-fixed", self.cpu_command(stem + "-fixed", 10, fixed_options),
                                TORCH_OPS)
            trigger = cpu_trigger(self.path(stem + "-buggy.json"))
            step_of = python_step
        violations = self.check(rules, buggy)
        steps = [step_of(violation) for violation in violations]
        steps = [step for step in steps if step is not None and step >= 0]
        detected_at = min((s for s in steps if trigger is not None and s >= trigger), default=None)
        early = [s for s in steps if trigger is not None and s < trigger]
        fixed_violations = self.check(rules, fixed)
        relations = sorted({v["relation"] for v in violations})
        return {
            "case": name,
            "family": family,
            "what": what,
            "trigger_step": trigger,
            "detection_step": detected_at,
            "detected": detected_at is not None and detected_at - trigger <= 1 and not early,
            "violations_buggy": len(violations),
            "violations_before_trigger": len(early),
            "violations_fixed": len(fixed_violations),
            "relations": relations,
            "first_violation": next((v["invariant"] for v in violations
                                     if step_of(v) == detected_at), None),
            "fixed_examples": [v["invariant"] for v in fixed_violations[:3]],
        }


def python_step(violation):
    return violation.get("step")


def read_jsonl(path):
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def rank_logs(log_dir):
    logs = {}
    for entry in os.listdir(log_dir):
        if entry.startswith("rank-") and entry.endswith(".jsonl"):
            logs[int(entry[5:-6])] = read_jsonl(os.path.join(log_dir, entry))
    return logs


def nccl_shape(calls):
    """Per step, what a rank issued: names, sizes, types, ops and which communicator (by order)."""
    comm_order, steps = {}, {}
    for call in calls:
        args = call.get("args", {})
        comm = args.get("comm")
        if call["name"] not in COMMUNICATION or call["step"] < 0:
            continue
        comm_index = comm_order.setdefault(comm, len(comm_order))
        shape = (call["name"], comm_index, args.get("count", args.get("sendcount")),
                 args.get("datatype"), args.get("op"))
        steps.setdefault(call["step"], []).append(shape)
    return steps


def nccl_trigger(buggy_dir, fixed_dir):
    """The first step where some rank of the buggy run issued other calls than in the fixed run."""
    buggy, fixed = rank_logs(buggy_dir), rank_logs(fixed_dir)
    first = None
    for rank, calls in buggy.items():
        mine, healthy = nccl_shape(calls), nccl_shape(fixed[rank])
        for step in sorted(mine):
            if mine[step] != healthy.get(step):
                first = step if first is None else min(first, step)
                break
    return first


def nccl_step_finder(log_dir):
    """Maps a violation to the step its offending call was issued at, by the workload's log."""
    by_pid = {}
    for calls in rank_logs(log_dir).values():
        counters = {}
        for call in calls:
            comm = call.get("args", {}).get("comm")
            if call["name"] not in COMMUNICATION:
                continue
            seq = counters.get(comm, 0)
            counters[comm] = seq + 1
            by_pid.setdefault(call["pid"], []).append((call["name"], seq, call))

    def step_of(violation):
        event = violation["event"]
        count = event["fields"].get("count", event["fields"].get("sendcount"))
        for name, seq, call in by_pid.get(event["pid"], []):
            args = call["args"]
            if name == event["name"] and seq == event.get("seq") and \
                    str(args.get("count", args.get("sendcount"))) == count:
                return call["step"]
        return None
    return step_of


def cpu_trigger(log_path):
    with open(log_path, encoding="utf-8") as log:
        truth = json.load(log)
    steps = truth["steps"]
    first_lr = steps[0]["lr"]
    for record in steps:
        if (not record["zero_grad"] or record["frozen_layers"] or record["lr"] != first_lr or
                not record["optimizer_updates_model"]):
            return record["step"]
    return None


def ddp_clip_trigger(log_dir):
    """The first step where one rank clipped its gradients and another did not."""
    clipped = {}
    for rank, records in rank_logs(log_dir).items():
        clipped[rank] = {r["step"] for r in records
                         if r.get("kind") == "api" and "clip_grad_norm_" in r.get("call", "")}
    every = set.union(*clipped.values())
    differing = [step for step in every if any(step not in steps for steps in clipped.values())]
    return min(differing) if differing else None


def markdown(results, command, elapsed):
    lines = [
        "## Silent errors",
        "",
        "Measured with `{}` on {}, {} CPUs ({}, kernel {}).".format(
            command, subprocess.run(["date", "-u", "+%Y-%m-%d"], stdout=subprocess.PIPE,
                                    text=True, check=False).stdout.strip(),
            os.cpu_count(), cpu_model(), os.uname().release),
        "Rules are inferred from healthy reference runs (the NCCL test double's",
        "workload with 8 ranks, tp 2, 12 steps; `train_cpu.py` with seeds 3 and 5;",
        "`train_ddp.py` with seed 21, 8 steps) and checked on each case's buggy and fixed",
        "variants (16 or 10 steps, other seeds). The step of the trigger comes from the",
        "workloads' own logs; the step of detection is the first violation's.",
        "",
        "| case | what goes wrong | detected? | step of trigger | step of detection | relation | "
        "violations on the fixed variant |",
        "|---|---|---|---|---|---|---|",
    ]
    for result in results:
        lines.append("| {} | {} | {} | {} | {} | {} | {} |".format(
            result["case"], result["what"], "yes" if result["detected"] else "**no**",
            result["trigger_step"],
            result["detection_step"] if result["detection_step"] is not None else "-",
            ", ".join(result["relations"]) or "-", result["violations_fixed"]))
    detected = sum(r["detected"] for r in results)
    false = sum(r["violations_fixed"] for r in results)
    lines += ["", "{} of {} cases detected within one step of their trigger; {} violations "
              "on the fixed variants; the whole suite took {:.0f} s.".format(
                  detected, len(results), false, elapsed),
              "",
              "NCCL matches calls by their order on a communicator: a call missing on one",
              "rank pairs its next call with the others' missing one, so the group at that",
              "sequence number disagrees (Consistent) in the step of the trigger; the job",
              "then hangs, as it would with NCCL, and the test double's timeout ends it.",
              "The Python cases record torch's scopes, the `add_` and `mul_` operators and",
              "one Python function (`SGD.__init__`), the probes their rules need."]
    lines += ["Every recording is taken once: one in which a training process shows no",
              "`Optimizer.step` scope or no `SGD.__init__` call fails the suite, with what",
              "the recorder said about the events it lost."]
    return "\n".join(lines) + "\n"


def cpu_model():
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tcheck", default=os.path.join(ROOT, "tcheck-bpf"))
    parser.add_argument("--work", default=None, help="keep traces and logs here")
    parser.add_argument("--case", action="append", default=[],
                        help="run only cases whose name contains this (repeatable)")
    parser.add_argument("--markdown", default=None, metavar="PATH")
    parser.add_argument("--results", default=None, metavar="PATH")
    parser.add_argument("--command", default="sudo make eval-silent",
                        help="the command named in the Markdown")
    parser.add_argument("--python", default=None, metavar="COMMAND",
                        help="the command that runs the Python workloads, e.g. a chrooted "
                             "interpreter (default: /usr/bin/python3)")
    args = parser.parse_args()
    if args.python:
        PYTHON[:] = shlex.split(args.python)
    if os.geteuid() != 0:
        print("silent_eval: records with BPF: run it as root", file=sys.stderr)
        return 2
    work = args.work or tempfile.mkdtemp(prefix="tcheck-silent.")
    os.makedirs(work, exist_ok=True)
    suite = Suite(args.tcheck, work)
    started = time.monotonic()
    results = []
    for index, case in enumerate(CASES):
        if args.case and not any(part in case[0] for part in args.case):
            continue
        result = suite.run_case(index, case)
        results.append(result)
        print("{:58} detected={} trigger={} detection={} fixed-violations={} {}".format(
            result["case"], result["detected"], result["trigger_step"],
            result["detection_step"], result["violations_fixed"],
            "; ".join(result["fixed_examples"])), flush=True)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as out:
            out.write(markdown(results, args.command, time.monotonic() - started))
    if args.results:
        with open(args.results, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)
    ok = all(r["detected"] and r["violations_fixed"] == 0 for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
