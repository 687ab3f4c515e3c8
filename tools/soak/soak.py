#!/usr/bin/env python3
"""Soak test: many attach/detach cycles on one live multi-rank job, then
recorders killed with SIGKILL mid-run.

1. Two copies of the NCCL test double's workload start together, same
   arguments but the log folder: the reference (never traced) and the
   traced job. The node agent (`tcheck-bpf agent`) runs across the whole
   soak, attached to the traced job only (--select).
2. While they run: CYCLES cycles, alternating `tcheck-bpf attach --pid`
   (ended by --duration, every fourth one by SIGINT at a random moment)
   and `tcheck-bpf record -o T --pid --duration`. Every SAMPLE_EVERY
   cycles the kernel's BPF objects, the tool's and the job's file
   descriptors and memory are counted between two cycles (they must equal
   the baseline) and during one (probes in place).
3. After the cycles, with the job still running: every count back to its
   baseline; the agent stopped: the kernel's counts back to what they
   were before the soak, and no breakpoint page left in the job's code.
   Then both jobs are told to stop after the same step (--stop-file), and
   when they end: the traced job's logs (every NCCL call with its
   arguments and result, addresses and process ids renamed by first
   appearance) identical to the reference's, both exit 0.
4. KILLS recorders (`record -o T -- job`, a fresh 2-rank job each) killed
   with SIGKILL at a random step: each trace reads with `tcheck-bpf dump`
   up to its last complete chunk (checked against the file's own chunk
   headers), each rank's calls are a prefix of its log, and the job, left
   running, finishes its steps.

Prints progress; writes a Markdown result (--result) and the raw samples
(--samples, JSON). Exit status 0 when every check holds. Needs root.
"""
import argparse
import glob
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The soak runs a copy of the binary, so a rebuild meanwhile does not stop it.
BUILT = os.path.join(ROOT, "tcheck-bpf")
TCHECK = BUILT
BUILT_WORKLOAD = os.path.join(ROOT, ".output", "tests", "nccl-workload")
WORKLOAD = BUILT_WORKLOAD
TRACEFS = "/sys/kernel/tracing"

# Log fields that hold an address or an identity the run chose: renamed by
# first appearance (per rank for addresses and process ids, per job for the
# communicator identities all ranks share), so that equal stays equal.
PER_RANK_IDENTITIES = {"pid", "tid", "comm", "sendbuff", "recvbuff", "buff", "stream", "newcomm",
                       "newcomm_out", "config", "comm_out", "handle", "handle_out", "asyncError"}
SHARED_IDENTITIES = {"comm_hash", "commId", "uniqueId"}
# Log fields that are times (none today; listed so that one added later is left out).
TIMING_FIELDS = {"ts_ns", "start_ns", "end_ns", "duration_ns", "time"}

START = time.monotonic()
# Process groups this soak started, killed when it ends (a rank outlives its
# launcher otherwise).
GROUPS = []


def end_groups():
    for group in GROUPS:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass


def start(command, out_path):
    """Starts a command in its own process group, output to a file."""
    child = subprocess.Popen(command, stdout=open(out_path, "w"), stderr=subprocess.STDOUT,
                             start_new_session=True)
    GROUPS.append(child.pid)
    return child
# The jobs' step limit: never reached, the soak stops them with --stop-file
# this many steps ahead of the furthest rank.
JOB_STEPS = 100000000
STOP_AHEAD_STEPS = 50
# What the agent's RSS may grow from a tenth of the cycles to their end.
AGENT_RSS_SLACK_KB = 1024
# How long a cycle sampled while its probes are in place lasts at least.
DURING_SECONDS = 1.5
FAILURES = []


def say(text):
    elapsed = time.monotonic() - START
    print(f"[{int(elapsed) // 60:3d}:{int(elapsed) % 60:02d}] {text}", flush=True)


def failure(text):
    FAILURES.append(text)
    say("FAILED: " + text)


# ---- counting ----

def bpftool_ids(kind):
    out = subprocess.run(["bpftool", "-j", kind, "show"], capture_output=True, text=True,
                         check=False).stdout
    try:
        return {entry["id"] for entry in json.loads(out or "[]")}
    except (ValueError, KeyError, TypeError):
        return set()


def parents():
    """{pid: parent pid} of every process."""
    table = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            text = open(stat).read()
        except OSError:
            continue
        table[int(stat.split("/")[2])] = int(text[text.rindex(")") + 2:].split()[1])
    return table


def bpf_holders():
    """Which processes hold each BPF object, from /proc/*/fdinfo: {(kind, id): {pid}}."""
    held = {}
    for fd_dir in glob.glob("/proc/[0-9]*/fd"):
        pid = int(fd_dir.split("/")[2])
        try:
            entries = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in entries:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if not target.startswith(("anon_inode:bpf", "anon_inode:btf")):
                continue
            try:
                info = open(f"/proc/{pid}/fdinfo/{fd}").read()
            except OSError:
                continue
            for kind in KINDS:
                found = re.search(rf"^{kind}_id:\s*(\d+)", info, re.M)
                if found:
                    held.setdefault((kind, int(found.group(1))), set()).add(pid)
    return held


# bpftool's object kinds, and the word fdinfo names their ids with.
KINDS = {"prog": "progs", "link": "links", "map": "maps", "btf": "btf"}
# Processes of this soak: the agent, and whatever this script started.
OURS = {os.getpid()}


def ours(pid, table):
    seen = 0
    while pid > 1 and seen < 64:
        if pid in OURS:
            return True
        pid = table.get(pid, 0)
        seen += 1
    return False


def uprobe_events():
    try:
        return sum(1 for line in open(f"{TRACEFS}/uprobe_events") if line.strip())
    except OSError:
        return -1


def kernel_counts():
    """BPF objects in the kernel that no other tool holds: those of this soak
    and those nobody holds (pinned, kernel-owned, or leaked). A shared machine
    runs other tracers; objects only their processes hold are counted apart."""
    ids = {kind: bpftool_ids(kind) for kind in KINDS}
    held = bpf_holders()
    table = parents()
    counts = {"foreign": 0}
    for kind, name in KINDS.items():
        mine = set()
        for one in ids[kind]:
            holders = held.get((kind, one), set())
            if holders and not any(ours(pid, table) for pid in holders):
                counts["foreign"] += 1
            else:
                mine.add(one)
        counts[name] = mine
    counts["uprobe_events"] = uprobe_events()
    return counts


def settled_counts(want, tries=5):
    """kernel_counts(), taken again a few times while it differs from 'want'
    (objects freed a moment after their last holder closed them, or another
    tracer's objects seen between the listing and their holders)."""
    for attempt in range(tries):
        counts = kernel_counts()
        if want is None or summary(counts, foreign=False) == want:
            break
        time.sleep(0.2 * (attempt + 1))
    return counts


def summary(counts, foreign=True):
    return {k: (len(v) if isinstance(v, set) else v) for k, v in counts.items()
            if foreign or k != "foreign"}


def process_figures(pid):
    """File descriptors, resident memory (kB) and anonymous kB in executable
    file mappings (a uprobe's breakpoint turns its code page anonymous)."""
    try:
        fds = 0
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                # A rank rewrites its progress file through a short-lived temporary one.
                fds += ".progress.tmp." not in os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                pass
        status = open(f"/proc/{pid}/status").read()
        rss = int(re.search(r"^VmRSS:\s*(\d+)", status, re.M).group(1))
        threads = int(re.search(r"^Threads:\s*(\d+)", status, re.M).group(1))
        breakpoint_kb = 0
        executable = False
        for line in open(f"/proc/{pid}/smaps"):
            head = re.match(r"^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(\S*)", line)
            if head:
                executable = "x" in head.group(1) and head.group(2).startswith("/")
            elif executable and line.startswith("Anonymous:"):
                breakpoint_kb += int(line.split()[1])
    except (OSError, AttributeError):
        return None
    return {"fds": fds, "rss_kb": rss, "threads": threads, "breakpoint_kb": breakpoint_kb}


def job_processes(launcher):
    """The launcher and its rank processes, ranks in pid order."""
    try:
        children = open(f"/proc/{launcher}/task/{launcher}/children").read().split()
    except OSError:
        children = []
    return [launcher] + sorted(int(c) for c in children)


def job_figures(launcher):
    figures = {}
    for pid in job_processes(launcher):
        one = process_figures(pid)
        if one:
            figures[pid] = one
    return figures


def totals(figures):
    return {key: sum(f[key] for f in figures.values()) for key in
            ("fds", "rss_kb", "threads", "breakpoint_kb")} if figures else {}


# ---- jobs and logs ----

def normalised_log(log_dir):
    """Each rank's calls with identities renamed and timing fields dropped."""
    shared = {}
    ranks = {}
    for path in sorted(glob.glob(os.path.join(log_dir, "rank-*.jsonl"))):
        mine = {}
        calls = []

        def rename(key, value, table):
            if not isinstance(value, int) or value == 0:
                return value
            return table.setdefault((key in SHARED_IDENTITIES, value), f"@{len(table)}")

        with open(path) as handle:
            for line in handle:
                call = json.loads(line)
                out = {}
                for key, value in call.items():
                    if key in TIMING_FIELDS:
                        continue
                    if key == "args":
                        value = {k: rename(k, v, shared if k in SHARED_IDENTITIES else mine)
                                 if k in PER_RANK_IDENTITIES | SHARED_IDENTITIES else v
                                 for k, v in value.items() if k not in TIMING_FIELDS}
                    elif key in PER_RANK_IDENTITIES:
                        value = rename(key, value, mine)
                    out[key] = value
                calls.append(json.dumps(out, sort_keys=True))
        ranks[os.path.basename(path)] = calls
    return ranks


def compare_logs(reference_dir, traced_dir):
    reference = normalised_log(reference_dir)
    traced = normalised_log(traced_dir)
    calls = sum(len(c) for c in reference.values())
    if sorted(reference) != sorted(traced):
        return calls, f"rank logs differ: {sorted(reference)} vs {sorted(traced)}"
    for name in sorted(reference):
        want, got = reference[name], traced[name]
        for index, (a, b) in enumerate(zip(want, got)):
            if a != b:
                return calls, f"{name} line {index + 1}: reference {a} traced {b}"
        if len(want) != len(got):
            return calls, f"{name}: reference {len(want)} calls, traced {len(got)}"
    return calls, None


def progress(log_dir, rank=0):
    try:
        return int(open(os.path.join(log_dir, f"rank-{rank}.progress")).read().strip() or -1)
    except (OSError, ValueError):
        return -1


def start_job(log_dir, ranks, steps, step_sleep_ms, wait_file, out_path, stop_file=None):
    os.makedirs(log_dir, exist_ok=True)
    command = [WORKLOAD, "--ranks", str(ranks), "--steps", str(steps),
               "--step-sleep-ms", str(step_sleep_ms), "--log-dir", log_dir]
    if wait_file:
        command += ["--wait-file", wait_file]
    if stop_file:
        command += ["--stop-file", stop_file]
    return start(command, out_path)


def wait_until(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    failure(f"timed out after {seconds} s waiting for {what}")
    return False


# ---- one cycle ----

def run_tool(arguments, timeout, err_path, interrupt_after=None, during=None):
    """Runs tcheck-bpf; optionally calls during(pid) once its probes are in
    place and sends SIGINT interrupt_after seconds after that. Returns (status,
    seconds, peak RSS in kB, stderr tail, what during() returned)."""
    began = time.monotonic()
    with open(err_path, "w") as err:
        tool = subprocess.Popen([TCHECK, "--quiet"] + arguments, stdout=subprocess.DEVNULL,
                                stderr=err)
    sample = None
    in_place = (during or interrupt_after) and probes_in_place(tool)
    if during and in_place:
        sample = during(tool.pid)
    if interrupt_after and in_place:
        time.sleep(interrupt_after)
    if interrupt_after and tool.poll() is None:
        tool.send_signal(signal.SIGINT)
    deadline = began + timeout
    while True:
        pid, wait_status, usage = os.wait4(tool.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            tool.kill()
            pid, wait_status, usage = os.wait4(tool.pid, 0)
            break
        time.sleep(0.01)
    tool.returncode = os.waitstatus_to_exitcode(wait_status)
    seconds = time.monotonic() - began
    message = open(err_path).read().strip()[-300:]
    if seconds > timeout:
        message = "timed out: " + message
    return tool.returncode, seconds, usage.ru_maxrss, message, sample


def probes_in_place(tool, seconds=5):
    """Waits until the tool holds BPF links and their number stopped changing."""
    deadline = time.monotonic() + seconds
    last = -1
    while time.monotonic() < deadline and tool.poll() is None:
        links = 0
        try:
            for fd in os.listdir(f"/proc/{tool.pid}/fd"):
                try:
                    links += os.readlink(f"/proc/{tool.pid}/fd/{fd}") == "anon_inode:bpf_link"
                except OSError:
                    pass
        except OSError:
            return False
        if links and links == last:
            return True
        last = links
        time.sleep(0.05)
    return False


# ---- trace files ----

def complete_chunks(path):
    """(complete chunks, bytes after the last one) from the file's own headers."""
    data = open(path, "rb").read()
    if len(data) < 24 or data[:8] != b"TCHKTRC\n":
        return 0, len(data)
    offset = 24 + struct.unpack_from("<I", data, 16)[0]
    chunks = 0
    while offset + 40 <= len(data) and data[offset:offset + 4] == b"CHNK":
        length = struct.unpack_from("<I", data, offset + 4)[0]
        if offset + 40 + length > len(data):
            break
        offset += 40 + length
        chunks += 1
    return chunks, len(data) - offset


def prefix_check(trace_jsonl, log_dir):
    """Each rank's traced calls must be the first calls of its log."""
    trace = [json.loads(line) for line in open(trace_jsonl) if line.strip()]
    calls = [r for r in trace if r.get("kind") == "nccl" and r.get("depth") == 0]
    for path in glob.glob(os.path.join(log_dir, "rank-*.jsonl")):
        log = [json.loads(line) for line in open(path)]
        # Polled constantly: the tracer keeps only the failures.
        log = [c for c in log
               if not (c["name"] == "ncclCommGetAsyncError" and c.get("async_error") == 0)]
        mine = sorted((c for c in calls if c["pid"] == log[0]["pid"]), key=lambda c: c["ts_ns"])
        if len(mine) > len(log):
            return len(calls), f"{path}: {len(mine)} traced calls, the log has {len(log)}"
        for index, (want, got) in enumerate(zip(log, mine)):
            if (want["name"], want["ret"]) != (got["name"], got["ret"]):
                return len(calls), (f"{os.path.basename(path)} call {index}: log "
                                    f"{want['name']}={want['ret']} trace {got['name']}={got['ret']}")
    return len(calls), None


def dump(trace, out_path):
    done = subprocess.run([TCHECK, "dump", trace, "-o", out_path], capture_output=True, text=True,
                          timeout=120, check=False)
    return done.returncode, done.stderr.strip()


def fresh_trace(path):
    """path, with the trace an earlier record left there removed: record refuses to replace it."""
    if os.path.exists(path):
        os.remove(path)
    return path


# ---- phases ----

def calibrate(args, work):
    """Times one attach and one record cycle on a short job and the job's step."""
    log_dir = os.path.join(work, "calibration")
    job = start_job(log_dir, args.ranks, 100000, args.step_sleep_ms, None,
                    os.path.join(work, "calibration.out"))
    try:
        wait_until(lambda: progress(log_dir, args.ranks - 1) >= 2, 30, "the calibration job")
        first_step, first_time = progress(log_dir), time.monotonic()
        times = []
        for cycle in range(6):
            arguments = (["attach", "--pid", str(job.pid), "--duration", str(args.attach_seconds)]
                         if cycle % 2 == 0 else
                         ["record", "-o", fresh_trace(os.path.join(work, "calibration.trace")),
                          "--pid", str(job.pid), "--duration", str(args.record_seconds)])
            status, seconds, _, err, _ = run_tool(arguments, 60, os.path.join(work, "tool.err"))
            if status != 0:
                failure(f"calibration: tcheck-bpf {arguments[0]} exited {status}: {err}")
            times.append(seconds)
        times = sorted(times[1:])  # the first pays for cold caches
        step_seconds = (time.monotonic() - first_time) / max(1, progress(log_dir) - first_step)
    finally:
        job.terminate()
        job.wait()
    shutil.rmtree(log_dir, ignore_errors=True)
    return times[len(times) // 2], step_seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--step-sleep-ms", type=int, default=30)
    parser.add_argument("--attach-seconds", type=float, default=0.1)
    parser.add_argument("--record-seconds", type=float, default=0.1)
    parser.add_argument("--sample-every", type=int, default=10)
    parser.add_argument("--during-every", type=int, default=50,
                        help="count while a cycle's probes are in place every N cycles")
    parser.add_argument("--dump-every", type=int, default=10,
                        help="dump every Nth record cycle's trace and check it reads")
    parser.add_argument("--work-dir", default=os.path.join(ROOT, ".output", "soak"))
    parser.add_argument("--result", default=None, help="Markdown result (default WORK/result.md)")
    parser.add_argument("--samples", default=None, help="samples as JSON (default WORK/samples.json)")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()

    if os.geteuid() != 0:
        sys.exit("soak: needs root (BPF)")
    # A shell starts a background command with SIGINT ignored, and its children
    # would inherit that: the agent and `attach` are stopped with SIGINT here.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for path in (BUILT, BUILT_WORKLOAD):
        if not os.access(path, os.X_OK):
            sys.exit(f"soak: {path} is missing: run make first")
    if not shutil.which("bpftool"):
        sys.exit("soak: bpftool is not installed")
    if not os.path.exists(f"{TRACEFS}/uprobe_events"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], check=False)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    work = os.path.abspath(args.work_dir)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    global TCHECK, WORKLOAD
    TCHECK = os.path.join(work, "tcheck-bpf")
    shutil.copy2(BUILT, TCHECK)
    # The workload finds libnccl.so.2 through $ORIGIN/lib.
    WORKLOAD = os.path.join(work, "bin", "nccl-workload")
    shutil.copytree(os.path.join(ROOT, ".output", "tests", "lib"), os.path.join(work, "bin", "lib"),
                    symlinks=True)
    shutil.copy2(BUILT_WORKLOAD, WORKLOAD)
    result_path = args.result or os.path.join(work, "result.md")
    samples_path = args.samples or os.path.join(work, "samples.json")
    record = {"seed": seed, "commit": commit(), "started": time.strftime("%Y-%m-%d %H:%M UTC",
                                                                          time.gmtime()),
              "cycles_asked": args.cycles, "kills_asked": args.kills,
              "ranks": args.ranks, "samples": []}
    say(f"soak: {args.cycles} cycles, {args.kills} killed recorders, seed {seed}, work {work}")

    before = summary(settled_counts(None), foreign=False)
    record["kernel_before"] = before
    say(f"kernel before: {before}")

    cycle_seconds, step_seconds = calibrate(args, work)
    # Sampled cycles last DURING_SECONDS, and a sample takes about half a second.
    estimate = (args.cycles * cycle_seconds +
                args.cycles / args.during_every * (DURING_SECONDS + 1.0) +
                args.cycles / args.sample_every * 0.5)
    record.update(cycle_seconds=cycle_seconds, step_seconds=step_seconds)
    say(f"one cycle {cycle_seconds:.2f} s, one step {step_seconds * 1000:.1f} ms: cycles about "
        f"{estimate / 60:.1f} min")

    # ---- the job, its untraced twin and the agent ----
    go = os.path.join(work, "go")
    traced_dir, reference_dir = os.path.join(work, "traced"), os.path.join(work, "reference")
    port_socket = socket.socket()
    port_socket.bind(("127.0.0.1", 0))
    port = port_socket.getsockname()[1]
    port_socket.close()
    events = os.path.join(work, "agent-events.jsonl")
    agent = start([TCHECK, "agent", "--listen", f"127.0.0.1:{port}", "--events", events,
                   "--select", traced_dir], os.path.join(work, "agent.out"))
    metrics_url = f"http://127.0.0.1:{port}/metrics"

    def scrape():
        try:
            return urllib.request.urlopen(metrics_url, timeout=5).read().decode()
        except OSError:
            return None

    wait_until(lambda: scrape() is not None, 30, "the agent's metrics")
    agent_start = process_figures(agent.pid)
    record["agent_start"] = agent_start
    # Both jobs run until told to stop (--stop-file), after the last sample.
    stop = os.path.join(work, "stop")
    traced = start_job(traced_dir, args.ranks, JOB_STEPS, args.step_sleep_ms, go,
                       os.path.join(work, "traced.out"), stop)
    reference = start_job(reference_dir, args.ranks, JOB_STEPS, args.step_sleep_ms, go,
                          os.path.join(work, "reference.out"), stop)

    def attached():
        try:
            return sum('"event":"attached"' in line for line in open(events)) >= args.ranks + 1
        except OSError:
            return False

    wait_until(attached, 60, "the agent to attach to the traced job")
    # Wait for every rank to reach the gate before opening it.
    time.sleep(0.5)
    open(go, "w").close()
    wait_until(lambda: min(progress(traced_dir, r) for r in range(args.ranks)) >= 3, 60,
               "the traced job's first steps")
    time.sleep(0.5)

    def sample(label, cycle, want=None, tool=None):
        kernel = settled_counts(want) if want else kernel_counts()
        one = {"label": label, "cycle": cycle, "t": round(time.monotonic() - START, 2),
               "kernel": summary(kernel, foreign=False), "foreign": kernel["foreign"], "job": totals(job_figures(traced.pid)),
               "reference": totals(job_figures(reference.pid)),
               "agent": process_figures(agent.pid), "step": progress(traced_dir)}
        if tool:
            one["tool"] = process_figures(tool)
        record["samples"].append(one)
        return one, kernel

    baseline, baseline_kernel = sample("baseline", 0)
    say(f"baseline (agent attached): kernel {baseline['kernel']} job {baseline['job']} "
        f"agent {baseline['agent']}")
    scrape()

    # ---- cycles ----
    kinds = {"attach": 0, "attach-sigint": 0, "record": 0}
    statuses = {}
    dumped = 0
    between_mismatches = 0
    cycle_start = time.monotonic()
    trace = os.path.join(work, "cycle.trace")
    tool_err = os.path.join(work, "tool.err")
    record["tools"] = []
    cycle = 0
    for cycle in range(1, args.cycles + 1):
        if traced.poll() is not None:
            failure(f"the traced job ended (status {traced.returncode}) before cycle {cycle}")
            break
        during = ((lambda pid: sample("during", cycle, tool=pid)[0])
                  if cycle % args.during_every == args.during_every // 2 +
                  (cycle // args.during_every) % 2 else None)
        if cycle % 2 == 1:
            interrupt = None
            if cycle % 8 == 7:
                interrupt = rng.uniform(0, args.attach_seconds * 3)
                kind = "attach-sigint"
                arguments = ["attach", "--pid", str(traced.pid)]
            else:
                kind = "attach"
                arguments = ["attach", "--pid", str(traced.pid), "--duration",
                             str(max(args.attach_seconds, DURING_SECONDS) if during
                                 else args.attach_seconds)]
            status, seconds, peak, err, _ = run_tool(arguments, 60, tool_err,
                                                     interrupt_after=interrupt, during=during)
        else:
            kind = "record"
            status, seconds, peak, err, _ = run_tool(
                ["record", "-o", fresh_trace(trace), "--pid", str(traced.pid), "--duration",
                 str(max(args.record_seconds, DURING_SECONDS) if during
                     else args.record_seconds)], 60, tool_err, during=during)
            if status == 0 and (cycle // 2) % args.dump_every == 0:
                code, message = dump(trace, os.path.join(work, "cycle.jsonl"))
                calls = sum(1 for line in open(os.path.join(work, "cycle.jsonl"))
                            if '"kind":"nccl"' in line) if code == 0 else 0
                if code != 0 or calls == 0:
                    failure(f"cycle {cycle}: the trace does not read ({code}, {calls} calls): "
                            f"{message}")
                dumped += 1
        kinds[kind] += 1
        record["tools"].append([kind, round(seconds, 3), peak])
        statuses[status] = statuses.get(status, 0) + 1
        if status != 0:
            failure(f"cycle {cycle}: tcheck-bpf {kind} exited {status}: {err}")
        if cycle % args.sample_every == 0:
            one, kernel = sample("between", cycle, want=baseline["kernel"])
            scrape()
            if one["kernel"] != baseline["kernel"]:
                between_mismatches += 1
                say(f"cycle {cycle}: kernel counts {one['kernel']} differ from the baseline")
        if os.environ.get("SOAK_DEBUG"):
            say(f"cycle {cycle} {kind} {seconds:.2f} s{' sampled' if during else ''}")
        if cycle % 50 == 0 or cycle == args.cycles:
            last = record["samples"][-1]
            rate = (time.monotonic() - cycle_start) / cycle
            say(f"cycle {cycle}/{args.cycles} ({rate:.2f} s each, job step {progress(traced_dir)}"
                f"): kernel {last['kernel']} job fds {last['job'].get('fds')} rss "
                f"{last['job'].get('rss_kb')} kB, agent fds {last['agent'] and last['agent']['fds']}"
                f" rss {last['agent'] and last['agent']['rss_kb']} kB")
    cycles_done = cycle if traced.poll() is None else cycle - 1
    cycles_seconds = time.monotonic() - cycle_start
    record.update(cycles_done=cycles_done, cycles_seconds=cycles_seconds, kinds=kinds,
                  statuses={str(k): v for k, v in statuses.items()}, dumped=dumped,
                  between_mismatches=between_mismatches)

    # ---- after the cycles, the job still running ----
    time.sleep(0.5)
    if traced.poll() is not None:
        failure("the traced job ended before the after-cycles sample")
        return 1
    after_cycles, after_cycles_kernel = sample("after-cycles", cycles_done,
                                               want=baseline["kernel"])
    say(f"after the cycles: kernel {after_cycles['kernel']} job {after_cycles['job']} "
        f"agent {after_cycles['agent']}")
    for kind in ("progs", "links", "maps", "btf"):
        extra = after_cycles_kernel[kind] - baseline_kernel[kind]
        if len(after_cycles_kernel[kind]) != len(baseline_kernel[kind]):
            holders = bpf_holders()
            who = {i: sorted(holders.get((kind.rstrip("s"), i), ())) for i in sorted(extra)}
            failure(f"{kind}: {len(baseline_kernel[kind])} at the baseline, "
                    f"{len(after_cycles_kernel[kind])} after the cycles; new ids and holders {who}")
    if after_cycles["kernel"]["uprobe_events"] != baseline["kernel"]["uprobe_events"]:
        failure("uprobe events left in tracefs")
    for key in ("fds", "threads"):
        if after_cycles["job"].get(key) != baseline["job"].get(key):
            failure(f"the traced job's {key}: {baseline['job'].get(key)} at the baseline, "
                    f"{after_cycles['job'].get(key)} after the cycles")
    if after_cycles["agent"] and baseline["agent"]:
        for key in ("fds", "threads"):
            if after_cycles["agent"][key] != baseline["agent"][key]:
                failure(f"the agent's {key}: {baseline['agent'][key]} at the baseline, "
                        f"{after_cycles['agent'][key]} after the cycles")
    # Memory: the traced job against its untraced twin, sampled at the same moments.
    grow_job = ((after_cycles["job"]["rss_kb"] - after_cycles["reference"]["rss_kb"]) -
                (baseline["job"]["rss_kb"] - baseline["reference"]["rss_kb"]))
    record["job_rss_growth_over_reference_kb"] = grow_job
    if grow_job > 256:
        failure(f"the traced job's memory grew {grow_job} kB more than its untraced twin's")

    # Memory: the agent warms up (allocator arenas, metric series) over its first
    # cycles; from a tenth of the cycles on it must stay flat.
    tenth = next((s for s in record["samples"] if s["label"] == "between" and
                  s["cycle"] >= cycles_done // 10), baseline)
    if after_cycles["agent"] and tenth["agent"]:
        grow_agent = after_cycles["agent"]["rss_kb"] - tenth["agent"]["rss_kb"]
        record["agent_rss_growth_kb"] = grow_agent
        if grow_agent > AGENT_RSS_SLACK_KB:
            failure(f"the agent's memory grew {grow_agent} kB from cycle {tenth['cycle']} to the "
                    "end of the cycles")

    # ---- the agent stopped ----
    agent_series = [s["agent"]["rss_kb"] for s in record["samples"] if s.get("agent")]
    agent.send_signal(signal.SIGINT)
    try:
        agent_status = agent.wait(timeout=30)
    except subprocess.TimeoutExpired:
        agent.kill()
        agent_status = agent.wait()
    record["agent_status"] = agent_status
    if agent_status != 0:
        failure(f"the agent exited {agent_status} on SIGINT")
    time.sleep(0.5)
    after_agent, after_agent_kernel = sample("after-agent", cycles_done,
                                             want=record["kernel_before"])
    say(f"agent stopped: kernel {after_agent['kernel']} job {after_agent['job']}")
    if after_agent["kernel"] != record["kernel_before"]:
        failure(f"kernel counts {after_agent['kernel']} after the soak, "
                f"{record['kernel_before']} before it")
    if after_agent["job"].get("breakpoint_kb") != 0:
        failure(f"{after_agent['job'].get('breakpoint_kb')} kB of breakpoint pages left in the "
                "job's code")
    if after_agent["job"].get("fds") != after_agent["reference"].get("fds"):
        failure("the traced job's fds differ from its untraced twin's")

    # Both jobs stop after the same step, well ahead of where either is.
    last_step = max(progress(d, r) for d in (traced_dir, reference_dir)
                    for r in range(args.ranks)) + STOP_AHEAD_STEPS
    with open(stop + ".tmp", "w") as handle:
        handle.write(f"{last_step}\n")
    os.rename(stop + ".tmp", stop)
    record["steps"] = last_step + 1
    say(f"both jobs stop after step {last_step}")

    # ---- recorders killed with SIGKILL, while the two jobs finish ----
    kill_start = time.monotonic()
    kill_steps = 300
    kills = []
    for index in range(1, args.kills + 1):
        log_dir = os.path.join(work, f"kill-{index}")
        cut = os.path.join(work, f"kill-{index}.trace")
        at_step = rng.randrange(0, kill_steps * 9 // 10)
        recorder = start([TCHECK, "--quiet", "record", "-o", cut, "--", WORKLOAD, "--ranks", "2",
                          "--steps", str(kill_steps), "--step-sleep-ms", "2", "--log-dir",
                          log_dir], log_dir + ".out")
        wait_until(lambda: progress(log_dir) >= at_step or recorder.poll() is not None, 60,
                   f"kill {index}'s job to reach step {at_step}")
        step = progress(log_dir)
        recorder.kill()
        recorder.wait()
        # The job, left running, must finish its steps untouched.
        finished = wait_until(lambda: min(progress(log_dir, r) for r in range(2)) ==
                              kill_steps - 1 and not subprocess.run(
                                  ["pgrep", "-f", log_dir], capture_output=True).stdout, 60,
                              f"kill {index}'s job to finish")
        chunks, tail = complete_chunks(cut) if os.path.exists(cut) else (0, 0)
        code, message = dump(cut, cut + ".jsonl")
        one = {"index": index, "kill_step": step, "chunks": chunks, "tail_bytes": tail,
               "dump_status": code, "job_finished": finished}
        said = re.search(r"records of the (\d+) complete chunks", message)
        if code != 0:
            failure(f"kill {index} (step {step}): the cut trace does not read: {message}")
        elif said and int(said.group(1)) != chunks:
            failure(f"kill {index}: dump read {said.group(1)} chunks, the file has {chunks} "
                    "complete ones")
        elif not said and tail != 0:
            failure(f"kill {index}: {tail} bytes after the last complete chunk, and dump said "
                    f"nothing: {message}")
        else:
            count, problem = prefix_check(cut + ".jsonl", log_dir)
            one["calls"] = count
            if problem:
                failure(f"kill {index}: the cut trace is not a prefix of the logs: {problem}")
        kills.append(one)
        if index % 10 == 0:
            say(f"killed recorder {index}/{args.kills}: step {step}, {chunks} complete chunks, "
                f"{one.get('calls', 0)} calls read back")
        shutil.rmtree(log_dir, ignore_errors=True)
        for path in (cut, cut + ".jsonl", log_dir + ".out"):
            if os.path.exists(path):
                os.unlink(path)
    record["kills"] = kills
    record["kills_seconds"] = time.monotonic() - kill_start
    time.sleep(0.5)
    final = summary(settled_counts(record["kernel_before"]), foreign=False)
    record["kernel_after"] = final
    if final != record["kernel_before"]:
        failure(f"kernel counts {final} after the killed recorders, "
                f"{record['kernel_before']} before the soak")
    # ---- the jobs end (they ran on while recorders were killed) ----
    say("waiting for both jobs to finish their steps")
    remaining = STOP_AHEAD_STEPS * step_seconds * 10 + 120
    for name, job in (("traced", traced), ("reference", reference)):
        try:
            status = job.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            job.kill()
            status = "killed: still running"
        record[f"{name}_status"] = status
        if status != 0:
            failure(f"the {name} job exited {status}: "
                    f"{open(os.path.join(work, name + '.out')).read()[-400:]}")
    calls, difference = compare_logs(reference_dir, traced_dir)
    record["logged_calls"] = calls
    record["logs_identical"] = difference is None
    if difference:
        failure(f"the traced job's results differ from the untraced run's: {difference}")
    say(f"jobs done: {calls} logged calls per job, logs "
        f"{'identical' if difference is None else 'DIFFER'}")
    shutil.rmtree(traced_dir, ignore_errors=True)
    shutil.rmtree(reference_dir, ignore_errors=True)

    record["total_seconds"] = time.monotonic() - START
    record["failures"] = FAILURES
    json.dump(record, open(samples_path, "w"), indent=1)
    write_result(result_path, record, agent_series, after_cycles, after_agent, baseline, args)
    say(f"result: {result_path}")
    say("PASSED" if not FAILURES else f"FAILED: {len(FAILURES)} check(s)")
    return 0 if not FAILURES else 1


def machine():
    model = "unknown CPU"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"kernel {os.uname().release}, {os.cpu_count()} CPUs, {model}"


def commit():
    def git(*arguments):
        return subprocess.run(["git", "-C", ROOT] + list(arguments), capture_output=True,
                              text=True, check=False)
    head = git("rev-parse", "--short", "HEAD").stdout.strip() or "unknown"
    if git("diff", "--quiet", "HEAD").returncode != 0:
        head += " (with uncommitted changes)"
    return head


def spread(values):
    values = sorted(values)
    if not values:
        return "-"
    return f"{values[0]}-{values[-1]}" if values[0] != values[-1] else f"{values[0]}"


def write_result(path, record, agent_series, after_cycles, after_agent, baseline, args):
    def kernel(counts):
        return (f"{counts['progs']} programs, {counts['links']} links, {counts['maps']} maps, "
                f"{counts['btf']} BTF, {counts['uprobe_events']} uprobe events")

    samples = record["samples"]
    during = [s for s in samples if s["label"] == "during"]
    between = [s for s in samples if s["label"] == "between"]
    most = max(during, key=lambda s: s["kernel"]["progs"]) if during else None
    agent_fds = sorted({s["agent"]["fds"] for s in samples if s.get("agent")})
    job_fds = sorted({s["job"]["fds"] for s in between})
    foreign = max((s["foreign"] for s in samples), default=0)
    tool_rows = []
    for kind in ("attach", "attach-sigint", "record"):
        runs = [t for t in record["tools"] if t[0] == kind]
        if not runs:
            continue
        seconds = sorted(t[1] for t in runs)
        first, last = runs[:len(runs) // 10 or 1], runs[-(len(runs) // 10 or 1):]
        fds = [s["tool"]["fds"] for s in during
               if s.get("tool") and record["tools"][s["cycle"] - 1][0] == kind]
        tool_rows.append(
            f"| `{kind}` | {len(runs)} | {seconds[len(seconds) // 2]:.2f} s (max {seconds[-1]:.2f}) "
            f"| {spread(t[2] for t in first)} | {spread(t[2] for t in last)} | {spread(fds)} |")
    kills = record["kills"]
    chunks = [k["chunks"] for k in kills]
    tenth = next((s for s in samples if s["label"] == "between" and
                  s["cycle"] >= record["cycles_done"] // 10), baseline)
    command = "`tools/soak/soak.py " + " ".join(sys.argv[1:]) + "`"
    if os.environ.get("MAKELEVEL"):
        command = f"`make soak` ({command})"
    lines = [
        "## Soak: attach/detach cycles and killed recorders",
        "",
        f"Command: {command}, started {record['started']}, commit {record['commit']}. Machine: {machine()}, shared (other sessions' tracers and tests "
        f"ran beside it: up to {foreign} BPF objects held by other processes at a sample, "
        "left out of the counts below). Seed " + str(record["seed"]) + ".",
        "",
        f"One {record['ranks']}-rank job of the NCCL test double's workload, {record['steps']} "
        f"steps (run until the soak ends it with `--stop-file`; `--step-sleep-ms {args.step_sleep_ms}`, {record['step_seconds'] * 1000:.1f} ms a "
        "step), run twice at once: traced, and untraced as the reference. `tcheck-bpf agent` "
        "stays attached to the traced job through the cycles (`--select`); kernel counts are "
        "the BPF objects no other process holds (`bpftool prog/link/map/btf show`, holders from "
        "`/proc/*/fdinfo`) and the lines of `uprobe_events`; job and agent figures from "
        "`/proc/PID/fd`, `/proc/PID/status` and `/proc/PID/smaps`. The killed recorders run "
        "`record -o T -- nccl-workload --ranks 2 --steps 300 --step-sleep-ms 2`, each killed "
        "with SIGKILL when rank 0 reaches a random step.",
        "",
        "| check | result |",
        "| --- | --- |",
        f"| cycles | {record['cycles_done']} of {record['cycles_asked']} in "
        f"{record['cycles_seconds'] / 60:.1f} min "
        f"({record['cycles_seconds'] / max(1, record['cycles_done']):.2f} s each): "
        f"{record['kinds']['attach']} `attach --pid --duration {args.attach_seconds}`, "
        f"{record['kinds']['attach-sigint']} `attach --pid` ended by SIGINT 0-"
        f"{args.attach_seconds * 3:g} s after its probes were in place, {record['kinds']['record']} `record -o T --pid "
        f"--duration {args.record_seconds}` ({record['dumped']} of their traces read back with "
        f"`dump`); exit statuses {record['statuses']} |",
        f"| kernel before the soak | {kernel(record['kernel_before'])} |",
        f"| baseline: agent attached to the job | {kernel(baseline['kernel'])} |",
        f"| during a cycle (most seen) | {kernel(most['kernel']) if most else '-'} |",
        f"| between cycles | {len(between)} samples, {record['between_mismatches']} differ from "
        "the baseline |",
        f"| after the cycles | {kernel(after_cycles['kernel'])} |",
        f"| after the agent stopped | {kernel(after_agent['kernel'])} |",
        f"| after the killed recorders | {kernel(record['kernel_after'])} |",
        f"| traced job (launcher + {record['ranks']} ranks): fds | baseline {baseline['job']['fds']}, "
        f"between cycles {spread(job_fds)}, after {after_cycles['job']['fds']}; untraced twin "
        f"{after_cycles['reference']['fds']} |",
        f"| traced job: threads | baseline {baseline['job']['threads']}, after "
        f"{after_cycles['job']['threads']} |",
        f"| traced job: RSS | baseline {baseline['job']['rss_kb']} kB (twin "
        f"{baseline['reference']['rss_kb']} kB), after the cycles {after_cycles['job']['rss_kb']} "
        f"kB (twin {after_cycles['reference']['rss_kb']} kB): "
        f"{record['job_rss_growth_over_reference_kb']:+d} kB against the twin |",
        f"| traced job: breakpoint pages (anonymous kB in its code mappings) | "
        f"{baseline['job']['breakpoint_kb']} with the agent attached, "
        f"{most['job']['breakpoint_kb'] if most else '-'} during a cycle, "
        f"{after_agent['job']['breakpoint_kb']} after the agent stopped |",
        f"| agent: fds | {spread(agent_fds)} over {len(agent_series)} samples |",
        (f"| agent: RSS | {agent_series[0]} kB at the baseline, {tenth['agent']['rss_kb']} kB "
         f"after {tenth['cycle']} cycles, {agent_series[-1]} kB at the end (max "
         f"{max(agent_series)} kB) |") if agent_series else "| agent: RSS | - |",
        f"| agent: exit status on SIGINT | {record['agent_status']} |",
        f"| job results | exit statuses {record.get('traced_status')} (traced), "
        f"{record.get('reference_status')} (untraced); {record.get('logged_calls')} logged "
        "calls per job, identical with addresses and ids renamed by first appearance: "
        f"{'yes' if record.get('logs_identical') else 'NO'} |",
        f"| recorders killed with SIGKILL | {len(kills)}, at steps "
        f"{spread(k['kill_step'] for k in kills)} of 300: "
        f"{sum(k['dump_status'] == 0 for k in kills)} read with `dump` (exit 0) up to their last "
        f"complete chunk ({spread(chunks)} chunks; "
        f"{sum(k['tail_bytes'] > 0 for k in kills)} cut inside a chunk), "
        f"{sum(1 for k in kills if 'calls' in k)} hold a prefix of every rank's log "
        f"({spread(k.get('calls', 0) for k in kills)} calls), "
        f"{sum(k['job_finished'] for k in kills)} jobs finished their steps; "
        f"{record['kills_seconds']:.0f} s |",
        f"| total time | {record['total_seconds'] / 60:.1f} min |",
        f"| failures | {len(record['failures'])}{': ' if record['failures'] else ''}"
        f"{'; '.join(record['failures'])} |",
        "",
        "The tool itself, per cycle (peak RSS from `wait4`, fds while its probes are in place):",
        "",
        "| command | runs | median time | peak RSS kB, first tenth | last tenth | fds |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ] + tool_rows
    open(path, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        end_groups()
