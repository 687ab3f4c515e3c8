#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The real-bug suite: reproductions of public silent-error reports, checked as a user would.

Every program is recorded with `tcheck-bpf record -o X.trace --python --
PYTHON SCRIPT ...` and nothing else. Rules are inferred once (`tcheck-bpf
infer`) from the three healthy references of other shapes in
tests/workloads/python/pipelines/ (the traces tools/eval/silent_cross_eval.py
records), then each reproduction in tests/workloads/python/real_bugs/ (a buggy
and a fixed twin) and each healthy program found in the healthy folders
(--healthy-dir, default tests/workloads/python/healthy_shapes/) is checked
with `tcheck-bpf check --rules`. Every program takes --steps N --log-dir DIR
(and --world-size N when distributed) and writes DIR/rank-R.jsonl: the truth.

A bug is caught when its first violation is at its trigger step or the next
and none comes before; the trigger step is the buggy twin's own log's,
confirmed by the first step where the log shows the bug's effect ("symptom");
a fixed twin's log must show none (or the suite stops, status 2). With
--deploy, every program but the references is recorded with `record --rules
RULES --events FILE` instead and judged by what the recorder found live
(silent_cross_eval.py says how). Writes a
Markdown table (--markdown) and the results as JSON (--results). Exit status:
0 every runnable bug caught and no violation on a fixed twin or a healthy
program, 1 otherwise, 2 on errors. Needs root (BPF).
"""
import argparse
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import silent_cross_eval as cross  # noqa: E402  (record, infer, check as a user does)

ROOT = cross.ROOT
REAL_BUGS = os.path.join(ROOT, "tests", "workloads", "python", "real_bugs")
HEALTHY_DIR = os.path.join(ROOT, "tests", "workloads", "python", "healthy_shapes")

# report, its program here (None: not runnable, then why), what goes wrong
BUGS = [
    ("pytorch#51800", "pytorch_51800_spectral_norm_eval.py",
     "spectral_norm model evaluated before any training forward"),
    ("pytorch#104336", "pytorch_104336_ddp_moved.py",
     "DDP model moved and back: gradients no longer all-reduced (2 ranks)"),
    ("pytorch#115607 (simulated)", "pytorch_115607_stale_param_list.py",
     "a step traced once keeps its parameter list: updates lost after a step without grads"),
    ("pytorch#84803, #96600, Baichuan2#86", "pytorch_84803_allreduce_data_loss.py",
     "gradient bucket lost in transit on one rank (injected, 2 ranks)"),
    ("PyTorch forum 84911", "forum_84911_frozen_backbone.py",
     "every layer but batch norm frozen, the head too"),
    ("Stack Overflow 60335387", "so_60335387_no_zero_grad.py", "zero_grad() never called"),
    ("Stack Overflow 67180955", "so_67180955_worker_same_augmentation.py",
     "DataLoader workers repeat the same random augmentation"),
    ("mmpretrain#702", "mmpretrain_702_frozen_stages.py",
     "frozen_stages applied in train() only, never called: frozen stage trained"),
    ("DeepSpeed#1801", "deepspeed_1801_clip_replicated.py",
     "replicated LayerNorm gradients clipped on rank 0 only (2 ranks)"),
    ("DeepSpeed#5794", None,
     "not runnable: a hang of MoE all_to_all calls uneven across ranks, not a silent error; "
     "needs DeepSpeed MoE (the hang suite covers uneven collectives)"),
    ("transformers#33844", "transformers_33844_dropout_in_eval.py",
     "attention dropout active in eval()"),
    ("transformers#33844 (SDPA shape)", "transformers_33844_sdpa_eval.py",
     "attention dropout_p passed to scaled_dot_product_attention in eval()"),
    ("transformers#17877", "transformers_17877_double_init.py",
     "weights initialised more than once (post_init per nesting level)"),
    ("transformers#23723", "transformers_23723_max_new_tokens.py",
     "more new tokens than max_new_tokens after a long prompt is trimmed"),
    ("transformers#34204", "transformers_34204_batch_collapsed.py",
     "processor collapses a batch of 8 into one sample"),
    ("lightning-thunder#725 (simulated)", "lightning_thunder_725_autocast.py",
     "a linear runs outside the autocast region (float32 on CPU bfloat16 autocast)"),
    ("DDP out of sync (@jxmnop)", "ddp_out_of_sync_unwrapped.py",
     "training goes on with the unwrapped module: no all-reduce (2 ranks)"),
    ("frozen layer still updated (issue 26)", "frozen_parameter_still_updated.py",
     "requires_grad=False layer moved by momentum and weight decay"),
    ("optimizer over part of the model (issue 26)", "optimizer_on_part_of_model.py",
     "optim.SGD(model.out.parameters()): the body never updated"),
    ("open-unlearning#178, transformers#26221", "open_unlearning_178_checkpoint_lora.py",
     "LoRA adapters in reentrant checkpointed blocks over frozen embeddings never trained"),
    ("nni#4521", "nni_4521_pruned_layers_replaced.py",
     "pruned layers replaced after the optimizer was built: the new layers never trained"),
    ("pytorch-fcn#56, vsepp#4", "pytorch_fcn_56_train_after_validation.py",
     "a validation mid-epoch leaves the model in eval() for the epoch's remaining steps"),
    ("graphstorm#1366, VGRNN#4", "graphstorm_1366_clip_after_step.py",
     "clip_grad_norm_ after optimizer.step(): the update used unclipped gradients"),
    ("idinvert_pytorch-reproduced#1", "idinvert_1_discriminator_not_cleared.py",
     "a GAN discriminator's optimizer steps without its zero_grad()"),
]


def progress(message):
    print("real_bugs_eval: " + message, file=sys.stderr, flush=True)


def read_truth(log_dir):
    """The ranks' logs: (the header of the lowest rank, or None, {rank: [step records]}).

    A reproduction's log opens with a {"kind": "run"} header; a healthy program's may have
    none (its lines are its steps)."""
    header, ranks = None, {}
    for path in sorted(glob.glob(os.path.join(log_dir, "rank-*.jsonl"))):
        rank = int(os.path.basename(path)[len("rank-"):-len(".jsonl")])
        with open(path, encoding="utf-8") as lines:
            records = [json.loads(line) for line in lines if line.strip()]
        if records and records[0].get("kind") == "run" and (header is None or rank == 0):
            header = records[0]
        ranks[rank] = [r for r in records if r.get("kind", "step") == "step" and "step" in r]
    if not ranks:
        raise RuntimeError("{}: no rank-R.jsonl log".format(log_dir))
    return header, ranks


def first_symptom(ranks):
    return min((r["step"] for steps in ranks.values() for r in steps if r.get("symptom")),
               default=None)


def recorder_warnings(stderr):
    """The recorder's warnings (calls lost, Python unseen): a verdict on a recording that lost
    calls is said with them, never taken as complete."""
    return [line.split("warning: ", 1)[1] for line in stderr.splitlines() if "warning: " in line]


def warnings_said(warnings):
    """A program's recorder warnings in one line: the windows of Python unseen from a fork or
    exec and the calls lost counted, any other warning as it was said."""
    unseen = [float(m.group(1)) for m in
              (re.search(r"ran Python for ([0-9.]+) ms", w) for w in warnings) if m]
    lost = sum(int(m.group(1)) for m in
               (re.match(r"([0-9]+) Python calls are not in the trace", w) for w in warnings)
               if m)
    said = []
    if unseen:
        said.append("{} process(es) ran Python before their probes were on (up to {:.0f} ms, "
                    "from the fork or exec)".format(len(unseen), max(unseen)))
    if lost:
        said.append("{} Python calls lost (their processes ended before the recorder named "
                    "their code)".format(lost))
    counted = ("ran Python for", "Python calls are not in", "before the recorder could name")
    said += [w for w in warnings if not any(phrase in w for phrase in counted)]
    return "; ".join(said)


def takes_world_size(python, script):
    result = subprocess.run([*python, script, "--help"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, check=False)
    return "--world-size" in result.stdout


class RealSuite(cross.Suite):
    def __init__(self, tcheck, work, python, steps):
        super().__init__(tcheck, work, python)
        self.steps = steps
        self.warnings = {}  # recording's stem: what the recorder warned of (losses, unseen)

    def record_program(self, stem, script, extra=()):
        """Records a program as README.md shows; returns (trace, its log folder, steps seen)."""
        trace, log_dir = self.path(stem + ".trace"), self.path(stem + ".log")
        number = self.next_number()
        started = time.monotonic()
        progress("[{}] recording {} {}".format(number, os.path.basename(script),
                                               " ".join(extra)))
        cross.remove_trace(trace)  # record refuses to replace a trace
        result = cross.run([self.tcheck, "record", "-o", trace,
                            *self.recording_options(trace), "--", *self.python, script, *extra,
                            "--steps", str(self.steps), "--log-dir", log_dir])
        warnings = recorder_warnings(result.stderr)
        self.warnings[stem] = warnings
        seen = self.steps_seen(trace)
        progress("[{}] {:.1f} s, optimizer steps per process: {}{}".format(
            number, time.monotonic() - started, seen or "none",
            "".join("\n    recorder: " + warning for warning in warnings)))
        return trace, log_dir, seen

    def run_bug(self, rules, index, bug):
        report, script, what = bug
        if script is None:
            return {"bug": report, "script": None, "what": what, "runnable": False}
        stem = "bug{:02d}-{}".format(index, script[:-3])
        path = os.path.join(REAL_BUGS, script)
        buggy, buggy_dir, buggy_seen = self.record_program(stem + "-buggy", path, ["--bug"])
        fixed, fixed_dir, fixed_seen = self.record_program(stem + "-fixed", path)
        header, buggy_ranks = read_truth(buggy_dir)
        fixed_header, fixed_ranks = read_truth(fixed_dir)
        if header is None or fixed_header is None:
            raise RuntimeError("{}: a log without its run header".format(script))
        trigger = header["trigger_step"]
        if trigger is None or first_symptom(buggy_ranks) != trigger:
            raise RuntimeError("{}: trigger step {} but the log's first symptom is at step "
                               "{}".format(script, trigger, first_symptom(buggy_ranks)))
        if fixed_header["trigger_step"] is not None or first_symptom(fixed_ranks) is not None:
            raise RuntimeError("{}: the fixed twin's log shows the bug".format(script))
        violations = self.check(rules, buggy)
        placed = [v for v in violations if v.get("step") is not None]
        first = min((v["step"] for v in placed), default=None)
        early = [v for v in placed if v["step"] < trigger]
        fixed_violations, fixed_notices = self.check_all(rules, fixed)
        first_rules = {v["invariant"] for v in placed if v["step"] == first}
        fixed_rules = {v["invariant"] for v in fixed_violations}
        # First violations all of rules the fixed twin breaks too say nothing of the bug.
        also_on_fixed = bool(first_rules) and first_rules <= fixed_rules
        return {
            "bug": report, "script": script, "what": what, "runnable": True,
            "trigger_step": trigger, "detection_step": first,
            "caught": first is not None and 0 <= first - trigger <= 1 and not early
                      and not also_on_fixed,
            "first_also_on_fixed": also_on_fixed,
            "relations": sorted({v["relation"] for v in placed if v["step"] == first}),
            "first_violations": sorted(first_rules),
            "violations_buggy": len(violations),
            "violations_before_trigger": len(early),
            "violations_fixed": len(fixed_violations),
            "notices_fixed": len(fixed_notices),
            "fixed_rules": sorted(fixed_rules),
            "optimizer_steps_seen": {"buggy": buggy_seen, "fixed": fixed_seen},
            "recorder_warnings": self.warnings[stem + "-buggy"] + self.warnings[stem + "-fixed"],
            "other_live_findings": {"buggy": self.other_live_findings[buggy],
                                    "fixed": self.other_live_findings[fixed]},
        }

    def run_healthy_program(self, rules, script, world_size):
        extra = ["--world-size", str(world_size)] if world_size else []
        stem = "healthy-{}{}".format(os.path.basename(script)[:-3],
                                     "-w{}".format(world_size) if world_size else "")
        trace, log_dir, seen = self.record_program(stem, script, extra)
        _, ranks = read_truth(log_dir)
        violations, notices = self.check_all(rules, trace)
        return {"script": os.path.basename(script), "world_size": world_size or 1,
                "logged_steps": min(len(steps) for steps in ranks.values()),
                "violations": len(violations), "notices": len(notices),
                "rules": sorted({v["invariant"] for v in violations}),
                "optimizer_steps_seen": seen, "recorder_warnings": self.warnings[stem],
                "other_live_findings": self.other_live_findings[trace]}


def stack_versions(python):
    """'torch T, Python P' of the command line that runs the programs, or why not known."""
    result = subprocess.run([*python, "-c", "import sys, torch; print('torch {}, Python {}'"
                             ".format(torch.__version__, sys.version.split()[0]))"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            check=False)
    lines = result.stdout.strip().splitlines()
    return lines[-1] if result.returncode == 0 and lines else "torch version not known"


def markdown(bugs, healthy, totals, command, python, elapsed):
    lines = [
        "### Real bugs on {}{}".format(stack_versions(python),
                                       ", deploy mode" if totals["deploy"] else ""),
        "",
        "Programs run by `{}`.".format(" ".join(python).replace(ROOT, "CHECKOUT")),
        "",
        "Measured with `{}` on {}, {} CPUs, kernel {}.".format(
            command, time.strftime("%Y-%m-%d", time.gmtime()), os.cpu_count(),
            os.uname().release),
        "Rules inferred once from the three healthy references of",
        "`tests/workloads/python/pipelines/` (other shapes), each recorded with",
        "`record --python` only. " + cross.how_checked(totals["deploy"]),
        "Trigger: the program's own log; caught = first violation at the trigger step or the",
        "next, none before.",
        "",
        "| report | what goes wrong | trigger | first violation | caught? | relation | "
        "violations on the fixed twin (notices) |",
        "|---|---|---|---|---|---|---|",
    ]
    for bug in bugs:
        if not bug["runnable"]:
            lines.append("| {} | {} | - | - | not runnable | - | - |".format(bug["bug"],
                                                                            bug["what"]))
            continue
        lines.append("| {} | {} | {} | {} | {} | {} | {} |".format(
            bug["bug"], bug["what"], bug["trigger_step"],
            "-" if bug["detection_step"] is None else bug["detection_step"],
            ("yes" if bug["caught"] else "**no**") + (" †" if bug["first_also_on_fixed"] else ""),
            ", ".join(bug["relations"]) or "-",
            "{}{}".format(bug["violations_fixed"],
                          " ({})".format(bug["notices_fixed"]) if bug["notices_fixed"] else "")))
    if healthy:
        lines += ["", "| healthy program | world size | violations | rules violated |",
                  "|---|---|---|---|"]
        for program in healthy:
            lines.append("| {} | {} | {} | {} |".format(
                program["script"], program["world_size"], program["violations"],
                "; ".join(program["rules"])[:300] or "-"))
    lines += ["", "{} of {} runnable reproductions caught ({} not runnable); {} violations on "
              "the fixed twins ({} twins flagged); {} violations on {} healthy programs ({} "
              "flagged); {} rules; {:.0f} s.".format(
                  totals["caught"], totals["runnable"], totals["not_runnable"],
                  totals["violations_fixed"], totals["fixed_flagged"],
                  totals["violations_healthy"], totals["healthy_programs"],
                  totals["healthy_flagged"], totals["rules"], elapsed)]
    warned = [(row.get("bug") or "{} (world size {})".format(row["script"], row["world_size"]),
               warnings_said(row["recorder_warnings"]))
              for row in bugs + healthy if row.get("recorder_warnings")]
    if warned:
        lines += ["", "The recorder warned (a verdict on these recordings is of what was seen):"]
        lines += ["- {}: {}".format(name, said) for name, said in warned]
    else:
        lines += ["", "No recording lost a call or left a process's Python unseen (the "
                  "recorder warned of none)."]
    if any(bug.get("first_also_on_fixed") for bug in bugs):
        lines += ["", "† not caught: the first violations are all of rules the fixed twin "
                  "violates too."]
    other = cross.other_live_findings_said(
        [(bug["bug"] + " " + twin, bug["other_live_findings"][twin])
         for bug in bugs if bug["runnable"] for twin in ("buggy", "fixed")] +
        [("{} (world size {})".format(program["script"], program["world_size"]),
          program["other_live_findings"]) for program in healthy])
    if other:
        lines += ["", other]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="example: sudo %(prog)s --markdown /tmp/real.md --results /tmp/real.json")
    parser.add_argument("--tcheck", default=os.path.join(ROOT, "tcheck-bpf"),
                        help="the tcheck-bpf binary (default: the one built in this checkout)")
    parser.add_argument("--work", default=None, metavar="DIR",
                        help="keep traces, logs and violations here (default: a new folder in "
                             "/tmp); a chrooted --python must see it")
    parser.add_argument("--python", default="/usr/bin/python3", metavar="CMD",
                        help="the command line that runs the programs (default /usr/bin/python3)")
    parser.add_argument("--steps", type=int, default=10, help="steps per program (default 10)")
    parser.add_argument("--only", default=None, metavar="SCRIPTS",
                        help="comma-separated program file names: run only these bugs")
    parser.add_argument("--healthy-dir", action="append", default=None, metavar="DIR",
                        help="a folder of healthy programs (*.py taking --steps and --log-dir); "
                             "repeatable; default tests/workloads/python/healthy_shapes")
    parser.add_argument("--world-sizes", default="2,4,8", metavar="LIST",
                        help="world sizes for healthy programs that take --world-size "
                             "(default 2,4,8)")
    parser.add_argument("--markdown", default=None, metavar="FILE", help="write the table here")
    parser.add_argument("--results", default=None, metavar="FILE",
                        help="write the per-program results and the summary as JSON here")
    parser.add_argument("--command", default="sudo make eval-real",
                        help="the command named in the Markdown")
    cross.add_jobs_option(parser)
    cross.add_shared_references_option(parser)
    cross.add_deploy_option(parser)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("real_bugs_eval: records with BPF: run it as root", file=sys.stderr)
        return 2
    work = args.work or tempfile.mkdtemp(prefix="tcheck-real.")
    os.makedirs(work, exist_ok=True)
    python = shlex.split(args.python)
    only = set(args.only.split(",")) if args.only else None
    chosen = [bug for bug in BUGS if only is None or bug[1] in only]
    healthy_dirs = args.healthy_dir if args.healthy_dir is not None else [HEALTHY_DIR]
    healthy_scripts = sorted(path for folder in healthy_dirs
                             for path in glob.glob(os.path.join(folder, "*.py"))
                             if not os.path.basename(path).startswith("_")
                             and "common" not in os.path.basename(path))
    suite = RealSuite(args.tcheck, work, python, args.steps)
    started = time.monotonic()
    try:
        rules = suite.infer(args.jobs, args.shared_references)
        if args.deploy:
            suite.live_rules = rules
        bugs = cross.in_parallel(lambda item: suite.run_bug(rules, *item),
                                 list(enumerate(chosen)), args.jobs)
        for bug, result in zip(chosen, bugs):
            if result["runnable"]:
                progress("{}: caught={} trigger={} first={} {} fixed-violations={}".format(
                    bug[0], result["caught"], result["trigger_step"],
                    result["detection_step"], ",".join(result["relations"]),
                    result["violations_fixed"]))
        runs = [(script, size) for script in healthy_scripts
                for size in ([int(size) for size in args.world_sizes.split(",")]
                             if takes_world_size(python, script) else [None])]
        healthy = cross.in_parallel(lambda run: suite.run_healthy_program(rules, *run), runs,
                                    args.jobs)
        for program in healthy:
            progress("{} (world size {}): {} violations".format(
                program["script"], program["world_size"], program["violations"]))
    except (RuntimeError, OSError, ValueError, KeyError) as error:
        print("real_bugs_eval: {} (work folder {})".format(error, work), file=sys.stderr)
        return 2
    elapsed = time.monotonic() - started
    runnable = [bug for bug in bugs if bug["runnable"]]
    totals = {
        "rules": len(cross.rule_texts(rules)),
        "runnable": len(runnable), "not_runnable": len(bugs) - len(runnable),
        "caught": sum(bug["caught"] for bug in runnable),
        "violations_fixed": sum(bug["violations_fixed"] for bug in runnable),
        "fixed_flagged": sum(bug["violations_fixed"] > 0 for bug in runnable),
        "healthy_programs": len(healthy),
        "violations_healthy": sum(program["violations"] for program in healthy),
        "healthy_flagged": sum(program["violations"] > 0 for program in healthy),
        "seconds": round(elapsed, 1), "python": args.python, "work": work,
        "deploy": args.deploy,
    }
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as out:
            out.write(markdown(bugs, healthy, totals, args.command, python, elapsed))
    if args.results:
        with open(args.results, "w", encoding="utf-8") as out:
            json.dump({"summary": totals, "bugs": bugs, "healthy": healthy}, out, indent=1)
            out.write("\n")
    progress("{} of {} caught, {} violations on fixed twins, {} on healthy programs, "
             "{:.0f} s".format(totals["caught"], totals["runnable"], totals["violations_fixed"],
                               totals["violations_healthy"], elapsed))
    ok = totals["caught"] == totals["runnable"] and totals["violations_fixed"] == 0 and \
        totals["violations_healthy"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
