#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Evaluates hang and slowdown detection against injected faults.

Runs the NCCL test double's workload under `tcheck-bpf record` with seeded
random --delay faults (a hang: delay 0, or a slowdown of about one step) at
a random step, rank and position (forward, backward, collective, send), plus
fault-free runs, then checks each trace with `tcheck-bpf check --json` and
compares the findings with the ground truth the workload wrote (rank-R.fault
and its per-rank call logs). Prints a Markdown table. Needs root.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

COMMUNICATION = {"ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
                 "ncclBcast", "ncclReduce", "ncclAlltoAll", "ncclGather", "ncclScatter",
                 "ncclSend", "ncclRecv"}
POSITIONS = ["forward", "backward", "collective", "send"]
# Steps of about 65 ms: long enough that the scheduling noise of a shared two-core machine
# (late wake-ups of 5-20 ms) stays below the slowdown threshold (0.4 steps), short enough
# for a hundred runs in minutes. Slowdowns last 0.55-0.8 steps (below one step, or the
# ranks waiting on the straggler would be quiet for two steps: a hang).
STEP_SLEEP_MS = 60
SLOWDOWN_MS = (36, 52)
NICENESS = -15
# Logs and traces in memory: a disk busy with other work would stall the ranks' writes.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") else None


def run(tcheck, workload, directory, ranks, steps, delay, duration, blocking=False):
    """Records one run; kills what is left of the job afterwards. With 'blocking' the
    double's calls return only once their operations finished on every rank."""
    log_dir = os.path.join(directory, "log")
    trace = os.path.join(directory, "job.trace")
    events = os.path.join(directory, "live.jsonl")
    # Ahead of other work on a shared machine, which would inject delays of its own.
    command = ["nice", "-n", str(NICENESS), tcheck, "record", "--events", events, "-o", trace,
               "--duration", str(duration),
               "--", workload, "--ranks", str(ranks), "--steps", str(steps),
               "--step-sleep-ms", str(STEP_SLEEP_MS), "--log-dir", log_dir]
    if delay:
        command += ["--delay", delay]
    environment = dict(os.environ, NCCL_DOUBLE_BLOCKING="1" if blocking else "0")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True, env=environment)
    process.wait()
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return trace, log_dir, events


def live_findings(events):
    """What the recorder's live detectors published while the job ran."""
    if not os.path.exists(events):
        return []
    with open(events) as lines:
        return [json.loads(line) for line in lines if line.strip()]


def check(tcheck, trace):
    result = subprocess.run([tcheck, "check", "--json", trace], capture_output=True, text=True)
    if result.returncode not in (0, 1):  # 0 clean, 1 findings
        raise RuntimeError(f"check failed on {trace}: {result.stderr}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def nccl_hashes(tcheck, trace):
    """The trace's comm_id of each communicator mapped to NCCL's own commHash (the log's),
    and the time of the last collective or send/receive call seen on each (NCCL's ids)."""
    result = subprocess.run([tcheck, "dump", trace], capture_output=True, text=True)
    mapping, last_call = {}, {}
    for line in result.stdout.splitlines():
        record = json.loads(line)
        if record.get("kind") == "communicator" and record.get("comm_id") and \
                record.get("nccl_comm_hash"):
            mapping[int(record["comm_id"], 16)] = int(record["nccl_comm_hash"], 16)
        if record.get("kind") == "nccl" and record.get("name") in COMMUNICATION and \
                record.get("comm_id"):
            comm_id = int(record["comm_id"], 16)
            last_call[comm_id] = max(last_call.get(comm_id, 0), record["ts_ns"])
    return mapping, {mapping.get(comm, comm): ts for comm, ts in last_call.items()}


def translate(reports, mapping):
    """Report comm ids in the log's terms (NCCL's commHash)."""
    for report in reports:
        if report.get("comm_id"):
            comm_id = int(report["comm_id"], 16)
            report["comm_id"] = mapping.get(comm_id, comm_id)
        for rank in report.get("lagging_ranks") or []:
            missed = rank.get("missed_call")
            if missed and missed.get("comm_id"):
                comm_id = int(missed["comm_id"], 16)
                missed["comm_id"] = mapping.get(comm_id, comm_id)
    return reports


def rank_log(log_dir, rank):
    """The rank's calls, with comm_id and per-communicator seq added."""
    handles, seqs, calls = {}, {}, []
    with open(os.path.join(log_dir, f"rank-{rank}.jsonl")) as log:
        for line in log:
            call = json.loads(line)
            args = call.get("args", {})
            for out in ("comm_out", "newcomm_out"):
                if out in args and "comm_hash" in args:
                    handles[args[out]] = args["comm_hash"]
            comm_id = handles.get(args.get("comm"))
            call["comm_id"] = comm_id
            call["seq"] = None
            if call["name"] in COMMUNICATION and comm_id is not None:
                call["seq"] = seqs.get(comm_id, 0)
                seqs[comm_id] = call["seq"] + 1
            calls.append(call)
    return calls, seqs


def injection_index(calls, fault, world_id):
    """Index in the rank's log of the first call after the injected fault."""
    in_step = [i for i, call in enumerate(calls) if call.get("step") == fault["step"]]
    if not in_step:
        return len(calls)
    if fault["where"] == "forward":
        return in_step[0]
    if fault["where"] in ("backward", "send"):
        groups = [i for i in in_step if calls[i]["name"] == "ncclGroupStart"]
        return groups[1] if len(groups) > 1 else in_step[0]
    world = [i for i in in_step if calls[i]["comm_id"] == world_id]
    return world[0] if world else in_step[-1]


def comm_hex(value):
    return int(value, 16) if isinstance(value, str) else value


def judge_hang(report, fault, log_dir, ranks):
    """Whether the first hang report names the faulty rank and the collective it never issued."""
    calls, seqs = rank_log(log_dir, fault["rank"])
    laggards = [r.get("job_rank") for r in report.get("lagging_ranks") or []]
    rank_ok = laggards == [fault["rank"]]
    comm_id = comm_hex(report["comm_id"])
    expected_seq = seqs.get(comm_id)
    collective_ok = False
    truth = None
    if rank_ok and expected_seq is not None and report["seq"] == expected_seq:
        for peer in range(ranks):
            if peer == fault["rank"]:
                continue
            peer_calls, _ = rank_log(log_dir, peer)
            for call in peer_calls:
                if call["comm_id"] == comm_id and call["seq"] == expected_seq:
                    truth = call["name"]
        if truth is None:
            truth = same_call_a_step_earlier(calls, comm_id, expected_seq, fault["step"])
        collective_ok = truth == report["collective"]
    return rank_ok, collective_ok


def judge_missed_call(report, fault, log_dir):
    """Whether the hang names the first call the stopped rank did not make, on whichever
    communicator: from its own log, the call at the same place one step earlier (the
    workload makes the same calls every step), with the seq after its last there."""
    calls, seqs = rank_log(log_dir, fault["rank"])
    made = [c for c in calls if c["name"] in COMMUNICATION and c["comm_id"] is not None]
    in_step = [c for c in made if c.get("step") == fault["step"]]
    before = [c for c in made if c.get("step") == fault["step"] - 1]
    if len(before) <= len(in_step):
        return False
    truth = before[len(in_step)]
    missed = (report.get("lagging_ranks") or [{}])[0].get("missed_call") or {}
    return (missed.get("function") == truth["name"] and missed.get("comm_id") == truth["comm_id"]
            and missed.get("seq") == seqs.get(truth["comm_id"]))


def same_call_a_step_earlier(calls, comm_id, seq, step):
    """What the rank issued on the communicator at the same place one step before.

    The logs hold the calls that returned: in blocking mode the peers never returned
    from the call the faulty rank never made, and none logged it. The workload makes
    the same calls every step, so the call at that place is the one of the step before.
    """
    on_comm = [c for c in calls if c["comm_id"] == comm_id and c["seq"] is not None]
    per_step = sum(1 for c in on_comm if c.get("step") == step - 1)
    earlier = seq - per_step
    if per_step == 0 or earlier < 0 or earlier >= len(on_comm):
        return None
    return on_comm[earlier]["name"]


def judge_slowdown(report, fault, log_dir):
    calls, _ = rank_log(log_dir, fault["rank"])
    world_id = calls[0]["args"].get("comm_hash")
    rank_ok = [r.get("job_rank") for r in report.get("stragglers") or []] == [fault["rank"]]
    start = injection_index(calls, fault, world_id)
    comm_id = comm_hex(report["comm_id"])
    stage_ok = False
    if rank_ok:
        after = [call for call in calls[start:] if call["comm_id"] == comm_id
                 and call["seq"] is not None]
        stage_ok = bool(after) and after[0]["seq"] == report["seq"]
        report["expected_stage"] = [after[0]["name"], after[0]["seq"], after[0]["step"]] if after else None
    return rank_ok, stage_ok


def overlaps_fault(report, fault):
    start = report["detected_ns"] - report["step_ns"]
    return start <= fault["start_ns"] + fault["delay_ms"] * 1e6 and \
        report["detected_ns"] >= fault["start_ns"]


def f1(true_positive, false_positive, false_negative):
    precision = true_positive / (true_positive + false_positive) if true_positive + false_positive else 1.0
    recall = true_positive / (true_positive + false_negative) if true_positive + false_negative else 1.0
    score = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, score


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tcheck", default="./tcheck-bpf")
    parser.add_argument("--workload", default=".output/tests/nccl-workload")
    parser.add_argument("--hangs", type=int, default=50)
    parser.add_argument("--slowdowns", type=int, default=50)
    parser.add_argument("--clean", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--details", help="write one JSON line per run here")
    parser.add_argument("--init-hangs", type=int, default=10,
                        help="runs whose faulty rank never enters ncclCommInitRank")
    parser.add_argument("--blocking", action="store_true",
                        help="the double's blocking mode: ranks wait inside their calls")
    options = parser.parse_args()
    rng = random.Random(options.seed)
    plan = [("hang", i) for i in range(options.hangs)] + \
        [("slowdown", i) for i in range(options.slowdowns)] + \
        [("clean", i) for i in range(options.clean)]
    rng.shuffle(plan)
    tally = {key: 0 for key in ("hang_tp", "hang_fn", "hang_fp", "hang_rank", "hang_collective",
                                "hang_missed",
                                "slow_tp", "slow_fn", "slow_fp", "slow_rank", "slow_stage")}
    hang_latency, hang_latency_fault, hang_latency_live = [], [], []
    slow_latency, slow_latency_live = [], []
    details = open(options.details, "w") if options.details else None
    started = time.time()
    for kind, _ in plan:
        ranks = rng.choice([4, 8])
        step = rng.randint(6, 12)
        rank = rng.randrange(ranks)
        where = rng.choice(POSITIONS)
        delay_ms = 0 if kind == "hang" else rng.randint(*SLOWDOWN_MS)
        delay = None if kind == "clean" else f"{rank}:{step}:{where}:{delay_ms}"
        with tempfile.TemporaryDirectory(prefix="tcheck-eval.", dir=SCRATCH) as directory:
            trace, log_dir, events = run(options.tcheck, options.workload, directory, ranks,
                                         step + 6, delay, 4 if kind == "hang" else 20,
                                         options.blocking)
            mapping, last_call = nccl_hashes(options.tcheck, trace)
            reports = translate(check(options.tcheck, trace), mapping)
            live = translate(live_findings(events), mapping)
            fault_path = os.path.join(log_dir, f"rank-{rank}.fault")
            fault = json.load(open(fault_path)) if delay and os.path.exists(fault_path) else None
            hangs = [r for r in reports if r["kind"] == "hang"]
            slows = [r for r in reports if r["kind"] == "slowdown"]
            record = {"kind": kind, "ranks": ranks, "fault": fault, "reports": reports,
                      "live": live}
            if kind == "hang":
                if hangs:
                    tally["hang_tp"] += 1
                    rank_ok, collective_ok = judge_hang(hangs[0], fault, log_dir, ranks)
                    tally["hang_rank"] += rank_ok
                    tally["hang_collective"] += rank_ok and collective_ok
                    missed_ok = rank_ok and judge_missed_call(hangs[0], fault, log_dir)
                    tally["hang_missed"] += missed_ok
                    # From the moment progress stopped: the last call anywhere on the
                    # communicator the report names, as the trace saw it.
                    stopped = last_call.get(hangs[0]["comm_id"], fault["start_ns"])
                    hang_latency.append((hangs[0]["detected_ns"] - stopped) /
                                        hangs[0]["expected_step_ns"])
                    hang_latency_fault.append((hangs[0]["detected_ns"] - fault["start_ns"]) /
                                              hangs[0]["expected_step_ns"])
                    # The same hang as the live detectors published it, on their clock.
                    same = [r for r in live if r["kind"] == "hang" and
                            r["comm_id"] == hangs[0]["comm_id"]]
                    if same:
                        hang_latency_live.append((same[0]["reported_ns"] - stopped) /
                                                 same[0]["expected_step_ns"])
                    record.update(rank_ok=rank_ok, collective_ok=collective_ok,
                                  missed_ok=missed_ok)
                    # Later reports of the same hang must name the same rank: a report
                    # of a stall with no rank behind, or of another rank, is a false alarm.
                    tally["hang_fp"] += sum(
                        1 for r in hangs[1:]
                        if [x.get("job_rank") for x in r.get("lagging_ranks") or []] !=
                        [fault["rank"]])
                else:
                    tally["hang_fn"] += 1
                tally["slow_fp"] += len(slows)
            elif kind == "slowdown":
                tally["hang_fp"] += len(hangs)
                matching = [r for r in slows if fault and overlaps_fault(r, fault)]
                tally["slow_fp"] += len(slows) - len(matching[:1])
                if matching:
                    tally["slow_tp"] += 1
                    rank_ok, stage_ok = judge_slowdown(matching[0], fault, log_dir)
                    tally["slow_rank"] += rank_ok
                    tally["slow_stage"] += rank_ok and stage_ok
                    slow_latency.append((matching[0]["reported_ns"] - fault["start_ns"] -
                                         fault["delay_ms"] * 1e6) /
                                        matching[0]["expected_step_ns"])
                    same = [r for r in live if r["kind"] == "slowdown" and
                            r["comm_id"] == matching[0]["comm_id"] and
                            r["seq"] == matching[0]["seq"]]
                    if same:
                        slow_latency_live.append((same[0]["reported_ns"] - fault["start_ns"] -
                                                  fault["delay_ms"] * 1e6) /
                                                 same[0]["expected_step_ns"])
                    record.update(rank_ok=rank_ok, stage_ok=stage_ok)
                else:
                    tally["slow_fn"] += 1
            else:
                tally["hang_fp"] += len(hangs)
                tally["slow_fp"] += len(slows)
            if details:
                details.write(json.dumps(record) + "\n")
                details.flush()
    init_tally = run_init_hangs(options, details)
    elapsed = time.time() - started
    print_table(options, tally, (hang_latency, hang_latency_fault, hang_latency_live,
                                 slow_latency, slow_latency_live), elapsed)
    print_init_table(options, init_tally)


def run_init_hangs(options, details):
    """Runs whose faulty rank never enters ncclCommInitRank while the others wait inside it.

    Its own seed, so the main plan stays what it was. A run records for 14 s: the
    start-up limit (10 s) has to pass. A true positive is a first hang report of a
    communicator not created that names the faulty rank alone."""
    rng = random.Random(options.seed + 1000)
    tally = {"tp": 0, "fn": 0, "fp": 0, "latency": []}
    for _ in range(options.init_hangs):
        ranks = rng.choice([4, 8])
        rank = rng.randrange(ranks)
        with tempfile.TemporaryDirectory(prefix="tcheck-eval.", dir=SCRATCH) as directory:
            trace, log_dir, events = run(options.tcheck, options.workload, directory, ranks, 8,
                                         f"{rank}:0:init:0", 14, options.blocking)
            reports = check(options.tcheck, trace)
            fault_path = os.path.join(log_dir, f"rank-{rank}.fault")
            fault = json.load(open(fault_path)) if os.path.exists(fault_path) else None
            hangs = [r for r in reports if r["kind"] == "hang"]
            right = bool(hangs) and hangs[0].get("creating") and \
                [r["rank"] for r in hangs[0]["lagging_ranks"]] == [rank] and \
                hangs[0]["collective"] == "ncclCommInitRank"
            tally["tp" if right else "fn"] += 1
            tally["fp"] += len(reports) - (1 if right else 0)
            if right and fault:
                tally["latency"].append((hangs[0]["detected_ns"] - fault["start_ns"]) / 1e9)
            if details:
                details.write(json.dumps({"kind": "init-hang", "ranks": ranks, "fault": fault,
                                          "reports": reports, "right": right}) + "\n")
                details.flush()
    return tally


def print_init_table(options, tally):
    if not options.init_hangs:
        return
    latency = sorted(tally["latency"])
    print()
    print(f"Communicator creation: {options.init_hangs} runs (seed {options.seed + 1000}; 4 or "
          f"8 ranks) whose faulty rank never enters `ncclCommInitRank` while the others wait "
          f"inside it: {tally['tp']} reported as a communicator not created naming that rank "
          f"alone, {tally['fn']} missed, {tally['fp']} other reports"
          + (f"; reported {latency[len(latency) // 2]:.1f} s (median) after the fault, the "
             f"start-up limit being 10 s." if latency else "."))


def print_table(options, tally, latencies, elapsed):
    hang_latency, hang_latency_fault, hang_latency_live, slow_latency, slow_latency_live = \
        latencies
    def row(name, tp, fp, fn):
        precision, recall, score = f1(tp, fp, fn)
        return f"| {name} | {tp} | {fp} | {fn} | {precision:.2f} | {recall:.2f} | {score:.2f} |"

    def latency(values):
        if not values:
            return "n/a"
        values = sorted(values)
        return f"median {values[len(values) // 2]:.2f}, max {values[-1]:.2f}"

    print("**Blocking mode** (`NCCL_DOUBLE_BLOCKING=1`: every call returns once its operations "
          "finished on every rank, as gloo's do; ranks wait inside their calls)."
          if options.blocking else
          "**Asynchronous mode** (calls enqueue and return, as NCCL's collectives do).")
    print()
    print(f"{options.hangs} injected hangs, {options.slowdowns} injected slowdowns and "
          f"{options.clean} fault-free runs (seed {options.seed}; 4 or 8 ranks; steps of "
          f"about {STEP_SLEEP_MS + 5} ms; slowdowns of {SLOWDOWN_MS[0]}-{SLOWDOWN_MS[1]} ms) in "
          f"{elapsed / 60:.1f} minutes.")
    print()
    print("| what | true positives | false positives | false negatives | precision | recall | F1 |")
    print("|---|---|---|---|---|---|---|")
    print(row("hang detected", tally["hang_tp"], tally["hang_fp"], tally["hang_fn"]))
    wrong = tally["hang_tp"] - tally["hang_rank"]
    print(row("hang rank", tally["hang_rank"], tally["hang_fp"] + wrong, tally["hang_fn"] + wrong))
    wrong = tally["hang_tp"] - tally["hang_collective"]
    print(row("hang rank and collective", tally["hang_collective"], tally["hang_fp"] + wrong,
              tally["hang_fn"] + wrong))
    wrong = tally["hang_tp"] - tally["hang_missed"]
    print(row("hang rank and first call not made", tally["hang_missed"], tally["hang_fp"] + wrong,
              tally["hang_fn"] + wrong))
    print(row("slowdown detected", tally["slow_tp"], tally["slow_fp"], tally["slow_fn"]))
    wrong = tally["slow_tp"] - tally["slow_rank"]
    print(row("slowdown rank", tally["slow_rank"], tally["slow_fp"] + wrong, tally["slow_fn"] + wrong))
    wrong = tally["slow_tp"] - tally["slow_stage"]
    print(row("slowdown rank and stage", tally["slow_stage"], tally["slow_fp"] + wrong,
              tally["slow_fn"] + wrong))
    print()
    print("Detection latency, in expected steps of the job:")
    print()
    print(f"- hangs, from the last call on the stuck communicator to the moment the "
          f"silence passed the limit (`detected_ns`): {latency(hang_latency)}; from the "
          f"injection: {latency(hang_latency_fault)}; from the last call to the live "
          f"report of `record` (`reported_ns`, {len(hang_latency_live)} of the hangs): "
          f"{latency(hang_latency_live)};")
    print(f"- slowdowns, from the end of the injected delay to the report "
          f"(`reported_ns`) of `check`: {latency(slow_latency)}; to the live report of "
          f"`record` ({len(slow_latency_live)} of the slowdowns): {latency(slow_latency_live)}.")


if __name__ == "__main__":
    sys.exit(main())
