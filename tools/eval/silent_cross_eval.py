#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The cross-pipeline silent-error suite: rules from three healthy programs, cases of other shapes.

Used as a user would use the tool: every program is recorded with
`tcheck-bpf record -o X.trace --python -- PYTHON SCRIPT ...` (no operator, no
filter, no other tuning), `tcheck-bpf infer` runs once on the traces of the
three references in tests/workloads/python/pipelines/ (a CNN with SGD,
gradient accumulation and evaluation passes, an MLP with Adam, warm-up and clipping, 2-rank DDP with
clipping), and each case, a program of another shape with a buggy and a fixed
twin, is checked with `tcheck-bpf check --rules`. The truth is each case's own
JSON log: the step its bug takes effect, confirmed by the first step where the
twins' logs differ in the fact the bug is about (or the suite stops, status 2).
A case is detected when its first violation is at that step or the next one
and none comes before it.

Also reported: the share of rules that fire on healthy programs of other
shapes (the distinct rules violated on any fixed twin or on a healthy program
with no twin, HEALTHY below, out of the rules file).
With --deploy, the deploy mode is measured instead: the references are
recorded as above, and every other program with `record --rules RULES
--events FILE` (the inferred rules, checked live, only the probes they need);
what the recorder found live is the verdict, and anything else it found live
(a hang, a slowdown) is said beside it.
Writes a Markdown table (--markdown) and the results as JSON (--results).
Exit status: 0 every case detected and no violation on a fixed twin or a
healthy program, 1
otherwise, 2 on errors. Needs root (BPF).
"""
import argparse
import concurrent.futures
import fcntl
import json
import os
import shlex
import subprocess
import sys
import threading
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PIPELINES = os.path.join(ROOT, "tests", "workloads", "python", "pipelines")

REFERENCES = ["ref_cnn_sgd.py", "ref_mlp_adam.py", "ref_ddp_clip.py"]

# script, the fact of its log the bug shows in, case, shape, what goes wrong
CASES = [
    ("case_gru_zero_grad.py", "zero_grad", "zero_grad missing", "GRU, RMSprop",
     "zero_grad() no longer called from step 5"),
    ("case_attention_prefix.py", "trainable_parameters", "every layer frozen by a wrong prefix",
     "attention block, Adam",
     "head-only fine-tuning set up by name with a wrong prefix: Adam steps on nothing"),
    ("case_autoencoder_recreated.py", "optimizer_updates_model", "optimizer on a re-created model",
     "autoencoder, SGD Nesterov",
     "model re-created at step 5, the optimizer keeps the old one's parameters"),
    ("case_conv1d_eval.py", "training", "eval() never undone", "Conv1d, Adam + StepLR",
     "model.train() missing after the validation pass before step 4"),
    ("case_embeddingbag_warmup.py", "lr", "warm-up at learning rate 0", "EmbeddingBag, Adagrad",
     "hand-written warm-up with integer division: lr 0 from step 0"),
    ("case_ddp_clip_one_rank.py", "clipped", "clipping on one DDP rank", "DDP Conv1d, 2 ranks, SGD",
     "from step 5 only rank 0 clips: the replicas diverge"),
    ("case_resmlp_unused.py", "optimizer_updates_model", "optimizer on unused parameters",
     "residual MLP, SGD",
     "optimizer built on a layer forward() never calls (from step 0)"),
    ("case_lstm_lr_rebuild.py", "lr", "learning rate silently changed", "LSTM, SGD",
     "optimizer rebuilt with 10x lr at step 5"),
    ("case_bilinear_frozen.py", "trainable_parameters", "layer frozen mid-run",
     "Bilinear + MLP, Adamax",
     "layer deep.0 frozen from step 5"),
    ("case_batchnorm_skip.py", "optimizer_step", "optimizer.step skipped", "BatchNorm MLP, SGD",
     "a too tight loss-spike guard skips the update of step 5"),
    ("case_ddp_rollback_one_rank.py", "replicas_identical", "rollback on one DDP rank",
     "DDP LayerNorm MLP, 2 ranks, Adam",
     "at step 5 only rank 0 restores the last good weights: same updates, other values"),
]

# Healthy programs of yet other shapes, with no bug: script, shape
HEALTHY = [
    ("healthy_encoder_cosine.py",
     "Transformer encoder, SGD + cosine schedule, 3 micro-batches accumulated, clipping"),
    ("healthy_mlp_plateau.py",
     "MLP, SGD + ReduceLROnPlateau halving the learning rate, validation every step"),
]


def progress(message):
    print("silent_cross_eval: " + message, file=sys.stderr, flush=True)


def in_parallel(function, items, jobs):
    """function(item) for each item, up to `jobs` at once; the results in the items' order.

    Each recording is a process of its own with its own recorder, so programs
    recorded side by side see only their own probes' records. The first error
    is raised once the items already started have finished; the rest are not
    started."""
    if jobs <= 1:
        return [function(item) for item in items]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
    try:
        return list(pool.map(function, items))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def positive_count(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("needs a whole number of at least 1, not " + text)
    return value


def add_jobs_option(parser):
    parser.add_argument("--jobs", type=positive_count, default=1, metavar="N",
                        help="record up to N programs at once (default 1); each has its own "
                             "recorder, and the results do not depend on N")


def add_shared_references_option(parser):
    parser.add_argument("--shared-references", default=None, metavar="DIR",
                        help="record the references and infer their rules in DIR once, and "
                             "take the rules found there when another suite already did, with "
                             "the same binary and Python (the end-to-end tests share them); a "
                             "chrooted --python must see DIR")


def small_file(path):
    with open(path, encoding="utf-8") as text:
        return text.read()


def remove_trace(path):
    """Removes a trace (or its live findings) an earlier run of the suite left: record never
    replaces a trace."""
    if os.path.exists(path):
        os.remove(path)


def add_deploy_option(parser):
    parser.add_argument("--deploy", action="store_true",
                        help="deploy mode: record every program but the references with "
                             "--rules (the inferred rules, checked live, --events beside the "
                             "trace) instead of --python then check --rules")


def live_findings(trace):
    """Where a deploy-mode recording writes what it found live (record --events)."""
    return trace + ".events.jsonl"


def run(command, allowed=(0,)):
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            check=False)
    if result.returncode not in allowed:
        raise RuntimeError("{} exited {}: {}".format(" ".join(command), result.returncode,
                                                     (result.stdout + result.stderr)[-2000:]))
    return result


class Suite:
    def __init__(self, tcheck, work, python):
        self.tcheck, self.work, self.python = tcheck, work, python
        # Deploy mode: the rules file programs are recorded with (record --rules), checked
        # live; None: recorded with --python and checked offline (check --rules).
        self.live_rules = None
        self.other_live_findings = {}  # trace: kinds found live besides rules (hang, ...)
        self.count = 0
        self.counting = threading.Lock()
        self.total = len(REFERENCES) + 2 * len(CASES) + len(HEALTHY)

    def path(self, name):
        return os.path.join(self.work, name)

    def record(self, stem, script, extra=()):
        """Records a script as README.md shows; returns (trace, its JSON log, steps seen)."""
        trace, log = self.path(stem + ".trace"), self.path(stem + ".json")
        remove_trace(trace)  # record refuses to replace a trace
        number = self.next_number()
        started = time.monotonic()
        progress("[{}/{}] recording {} {}".format(number, self.total, script, " ".join(extra)))
        run([self.tcheck, "record", "-o", trace, *self.recording_options(trace), "--",
             *self.python, os.path.join(PIPELINES, script), *extra, "--log", log])
        seen = self.steps_seen(trace)
        progress("[{}/{}] {:.1f} s, optimizer steps per process: {}".format(
            number, self.total, time.monotonic() - started, seen or "none"))
        return trace, log, seen

    def recording_options(self, trace):
        """How a program is recorded: --python, or in deploy mode the rules checked live."""
        if self.live_rules is None:
            return ["--python"]
        findings = live_findings(trace)
        remove_trace(findings)
        return ["--rules", self.live_rules, "--events", findings]

    def next_number(self):
        """The next recording's number, for progress lines (recordings may run side by side)."""
        with self.counting:
            self.count += 1
            return self.count

    def steps_seen(self, trace):
        """How many steps ended by an Optimizer.step scope each process of the trace shows.

        The tool's steps: the distinct steps its Optimizer.step scopes fall in, so that an
        optimizer step run by another (ZeroRedundancyOptimizer's local Adam) counts once."""
        steps = {}
        for line in run([self.tcheck, "dump", trace]).stdout.splitlines():
            record = json.loads(line)
            if record.get("kind") == "torch_scope" and record["name"].startswith("Optimizer.step"):
                steps.setdefault(record["pid"], set()).add(record["step"])
        return sorted(len(seen) for seen in steps.values())

    def infer(self, jobs=1, shared=None):
        """The rules of the three references, recorded here; or with SHARED (a folder), those
        another suite inferred there with the same binary and Python, inferred there first
        if none did (one suite at a time: the others wait)."""
        if shared is None:
            return self.infer_here(jobs)
        os.makedirs(shared, exist_ok=True)
        binary = os.stat(self.tcheck)
        identity = json.dumps({"tcheck": os.path.realpath(self.tcheck), "size": binary.st_size,
                               "mtime_ns": binary.st_mtime_ns, "python": self.python})
        with open(os.path.join(shared, "lock"), "w", encoding="utf-8") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done = os.path.join(shared, "inferred-by.json")
            rules = os.path.join(shared, "rules.json")
            if os.path.exists(done) and small_file(done) == identity:
                progress("the references' rules, inferred by an earlier suite: " + rules)
                return rules
            rules = Suite(self.tcheck, shared, self.python).infer_here(jobs)
            with open(done + ".new", "w", encoding="utf-8") as out:
                out.write(identity)
            os.replace(done + ".new", done)
            return rules

    def infer_here(self, jobs):
        traces = in_parallel(lambda script: self.record("reference-" + script[:-3], script)[0],
                             REFERENCES, jobs)
        rules = self.path("rules.json")
        progress("inferring rules from the {} references".format(len(traces)))
        run([self.tcheck, "infer", "-o", rules, *traces])
        return rules

    def check_all(self, rules, trace):
        """What `check --rules` says of a trace, or in deploy mode what its recorder found live
        with the same rules: (the violations, the notices)."""
        if self.live_rules is not None:
            if rules != self.live_rules:
                raise RuntimeError("{}: recorded live with {}, not {}".format(
                    trace, self.live_rules, rules))
            jsonl = live_findings(trace)
        else:
            jsonl = trace + ".violations.jsonl"
            run([self.tcheck, "check", "--rules", rules, "--jsonl", jsonl, trace],
                allowed=(0, 1))
        with open(jsonl, encoding="utf-8") as lines:
            said = [json.loads(line) for line in lines if line.strip()]
        self.other_live_findings[trace] = sorted(
            s["kind"] for s in said if s["kind"] not in ("violation", "notice"))
        return ([s for s in said if s["kind"] == "violation"],
                [s for s in said if s["kind"] == "notice"])

    def check(self, rules, trace):
        return self.check_all(rules, trace)[0]

    def run_case(self, rules, index, case):
        script, evidence, name, shape, what = case
        stem = "case{}-{}".format(index, script[:-3])
        buggy, buggy_log, buggy_steps = self.record(stem + "-buggy", script, ["--bug"])
        fixed, fixed_log, fixed_steps = self.record(stem + "-fixed", script)
        trigger = confirmed_trigger(buggy_log, fixed_log, evidence)
        violations, notices = self.check_all(rules, buggy)
        placed = [v for v in violations if v.get("step") is not None]
        first = min((v["step"] for v in placed), default=None)
        early = [v for v in placed if v["step"] < trigger]
        fixed_violations, fixed_notices = self.check_all(rules, fixed)
        first_rules = {v["invariant"] for v in placed if v["step"] == first}
        fixed_rules = {v["invariant"] for v in fixed_violations}
        return {
            "case": name,
            "script": script,
            "shape": shape,
            "what": what,
            "trigger_step": trigger,
            "detection_step": first,
            "detected": first is not None and 0 <= first - trigger <= 1 and not early,
            # Not a violation, but said: what the program did on purpose by its own word.
            "noticed": noticed_at(notices, trigger) and first is None,
            "notice_step": min((n["step"] for n in notices if n.get("step") is not None),
                               default=None),
            "notices_fixed": len(fixed_notices),
            "relations": sorted({v["relation"] for v in placed if v["step"] == first}),
            "first_violations": sorted(first_rules),
            # The first violations are all of rules the fixed twin violates too: not the bug's.
            "first_also_on_fixed": bool(first_rules) and first_rules <= fixed_rules,
            "violations_buggy": len(violations),
            "violations_before_trigger": len(early),
            "violations_without_step": len(violations) - len(placed),
            "violations_fixed": len(fixed_violations),
            "fixed_rules": sorted(fixed_rules),
            "optimizer_steps_seen": {"buggy": buggy_steps, "fixed": fixed_steps},
            "other_live_findings": {"buggy": self.other_live_findings[buggy],
                                    "fixed": self.other_live_findings[fixed]},
        }


    def run_healthy(self, rules, index, program):
        script, shape = program
        trace, _, seen = self.record("healthy{}-{}".format(index, script[:-3]), script)
        violations = self.check(rules, trace)
        return {"script": script, "shape": shape, "violations": len(violations),
                "rules": sorted({v["invariant"] for v in violations}),
                "optimizer_steps_seen": seen,
                "other_live_findings": self.other_live_findings[trace]}


def noticed_at(notices, trigger):
    """Whether the first notice comes at the trigger step or the next."""
    steps = [n["step"] for n in notices if n.get("step") is not None]
    return bool(steps) and 0 <= min(steps) - trigger <= 1


def confirmed_trigger(buggy_log, fixed_log, evidence):
    """The buggy twin's trigger step, once its log and the fixed twin's show the bug there:
    the fact `evidence` first differs between them (on some rank) at that step."""
    with open(buggy_log, encoding="utf-8") as buggy, open(fixed_log, encoding="utf-8") as fixed:
        buggy, fixed = json.load(buggy), json.load(fixed)
    if fixed["trigger_step"] is not None or buggy["trigger_step"] is None:
        raise RuntimeError("{}: a buggy twin's log needs a trigger step, a fixed twin's "
                           "none".format(buggy_log))
    ranks = zip(buggy.get("ranks", {"0": buggy["steps"]}).values(),
                fixed.get("ranks", {"0": fixed["steps"]}).values())
    first = min((mine["step"] for buggy_steps, fixed_steps in ranks
                 for mine, healthy in zip(buggy_steps, fixed_steps)
                 if mine[evidence] != healthy[evidence]), default=None)
    if first != buggy["trigger_step"]:
        raise RuntimeError("{}: trigger step {}, but {} first differs from the fixed twin's at "
                           "step {}".format(buggy_log, buggy["trigger_step"], evidence, first))
    return first


def rule_texts(rules):
    with open(rules, encoding="utf-8") as handle:
        return [rule.get("text", "") for rule in json.load(handle)["rules"]]


def summary(results, healthy, rules):
    texts = rule_texts(rules)
    firing = sorted({text for result in results for text in result["fixed_rules"]} |
                    {text for program in healthy for text in program["rules"]})
    return {
        "rules": len(texts),
        "rules_firing_on_fixed": len(firing),
        "share_firing_on_fixed": len(firing) / len(texts) if texts else None,
        "firing_rules": firing,
        "cases": len(results),
        "detected": sum(result["detected"] for result in results),
        "noticed": sum(result["noticed"] for result in results),
        "violations_fixed": sum(result["violations_fixed"] for result in results),
        "healthy_programs": len(healthy),
        "violations_healthy": sum(program["violations"] for program in healthy),
    }


def how_checked(deploy):
    """The Markdown's sentence on how the programs under test were recorded and judged."""
    if deploy:
        return ("Deploy mode: each program under test is recorded with `record --rules` of "
                "those rules (checked live, `--events`), and judged by what the recorder "
                "found live.")
    return "Each program under test is recorded the same way and checked with `check --rules`."


def other_live_findings_said(programs):
    """A sentence on what the recorders found live besides rule violations, or ''."""
    found = ["{} ({})".format(name, ", ".join(kinds)) for name, kinds in programs if kinds]
    if not found:
        return ""
    return "Found live besides rule violations: " + "; ".join(found) + "."


def markdown(results, healthy, totals, command, python, elapsed):
    lines = [
        "## Silent errors across pipelines" + (", deploy mode" if totals["deploy"] else ""),
        "",
        "Measured with `{}` on {}, {} CPUs, kernel {}; workloads run by `{}`.".format(
            command, time.strftime("%Y-%m-%d", time.gmtime()), os.cpu_count(),
            os.uname().release, " ".join(python)),
        "Rules are inferred once from three healthy references of other shapes than the",
        "cases (`tests/workloads/python/pipelines/`: a CNN with SGD, gradient accumulation",
        "and evaluation passes, an MLP with Adam, warm-up and clipping, 2-rank DDP with",
        "clipping), each recorded",
        "as README.md shows (`record --python`, no operator, filter or other option).",
        how_checked(totals["deploy"]) + " The step of the",
        "trigger is the case's own log's; a case is detected when its first violation is",
        "at that step or the next and none comes before.",
        "",
        "| case | program | what goes wrong | step of trigger | step of detection | "
        "detected? | relation | violations on the fixed twin |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for result in results:
        lines.append("| {} | {} | {} | {} | {} | {} | {} | {} |".format(
            result["case"], result["shape"], result["what"], result["trigger_step"],
            "-" if result["detection_step"] is None else result["detection_step"],
            ("yes" if result["detected"] else
             "notice (not a violation)" if result["noticed"] else "**no**") +
            (" †" if result["first_also_on_fixed"] else ""),
            ", ".join(result["relations"]) or "-",
            result["violations_fixed"]))
    share = totals["share_firing_on_fixed"]
    for program in healthy:
        lines += ["", "Healthy program with no twin, `{}` ({}): {} violations.".format(
            program["script"], program["shape"], program["violations"])]
    lines += ["", "{} of {} cases detected ({} more said as a notice); {} violations on the "
              "fixed twins; {} of the {} rules "
              "({}) fire on healthy programs of other shapes (the fixed twins and the healthy "
              "programs); the suite took {:.0f} s.".format(
                  totals["detected"], totals["cases"], totals["noticed"],
                  totals["violations_fixed"],
                  totals["rules_firing_on_fixed"], totals["rules"],
                  "-" if share is None else "{:.0%}".format(share), elapsed)]
    if any(result["first_also_on_fixed"] for result in results):
        lines += ["", "† the first violations are all of rules the fixed twin violates too."]
    other = other_live_findings_said(
        [(result["case"] + " " + twin, result["other_live_findings"][twin])
         for result in results for twin in ("buggy", "fixed")] +
        [(program["script"], program["other_live_findings"]) for program in healthy])
    if other:
        lines += ["", other]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="example: sudo %(prog)s --markdown /tmp/cross.md --results /tmp/cross.json")
    parser.add_argument("--tcheck", default=os.path.join(ROOT, "tcheck-bpf"),
                        help="the tcheck-bpf binary (default: the one built in this checkout)")
    parser.add_argument("--work", default=None, metavar="DIR",
                        help="keep traces, logs and violations here (default: a new folder in "
                             "/tmp); a chrooted --python must see it")
    parser.add_argument("--python", default="/usr/bin/python3", metavar="CMD",
                        help="the command line that runs the workloads (default "
                             "/usr/bin/python3), e.g. a chrooted interpreter")
    parser.add_argument("--markdown", default=None, metavar="FILE", help="write the table here")
    parser.add_argument("--results", default=None, metavar="FILE",
                        help="write the per-case results and the summary as JSON here")
    parser.add_argument("--command", default="sudo make eval-silent",
                        help="the command named in the Markdown")
    add_jobs_option(parser)
    add_shared_references_option(parser)
    add_deploy_option(parser)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("silent_cross_eval: records with BPF: run it as root", file=sys.stderr)
        return 2
    work = args.work or tempfile.mkdtemp(prefix="tcheck-cross.")
    os.makedirs(work, exist_ok=True)
    python = shlex.split(args.python)
    suite = Suite(args.tcheck, work, python)
    started = time.monotonic()
    try:
        rules = suite.infer(args.jobs, args.shared_references)
        if args.deploy:
            suite.live_rules = rules
        results = in_parallel(lambda item: suite.run_case(rules, *item), list(enumerate(CASES)),
                              args.jobs)
        for result in results:
            progress("{}: detected={} trigger={} detection={} {} fixed-violations={}".format(
                result["case"], result["detected"], result["trigger_step"],
                result["detection_step"], ",".join(result["relations"]),
                result["violations_fixed"]))
        healthy = in_parallel(lambda item: suite.run_healthy(rules, *item),
                              list(enumerate(HEALTHY)), args.jobs)
        for program, result in zip(HEALTHY, healthy):
            progress("{}: {} violations".format(program[0], result["violations"]))
    except (RuntimeError, OSError, ValueError, KeyError) as error:
        print("silent_cross_eval: {} (work folder {})".format(error, work), file=sys.stderr)
        return 2
    elapsed = time.monotonic() - started
    totals = summary(results, healthy, rules)
    totals.update(seconds=round(elapsed, 1), python=args.python, work=work, deploy=args.deploy)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as out:
            out.write(markdown(results, healthy, totals, args.command, python, elapsed))
    if args.results:
        with open(args.results, "w", encoding="utf-8") as out:
            json.dump({"summary": totals, "cases": results, "healthy": healthy}, out, indent=1)
            out.write("\n")
    progress("{} of {} detected, {} violations on fixed twins, {} of {} rules fire on healthy "
             "programs, {:.0f} s".format(totals["detected"], totals["cases"],
                                         totals["violations_fixed"],
                                         totals["rules_firing_on_fixed"], totals["rules"], elapsed))
    ok = all(result["detected"] and result["violations_fixed"] == 0 for result in results) and \
        all(program["violations"] == 0 for program in healthy)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
