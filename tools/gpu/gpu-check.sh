#!/bin/bash
# SPDX-License-Identifier: MIT
# Checks tcheck-bpf on a GPU machine against real PyTorch 2.x with NCCL on the GPU
# (BENCHMARKS.md, "On a GPU"): what the machine is, a one-rank DDP job recorded with
# `record --python` and compared with its own log, the job attached to mid-run, and
# the step time untraced, with NCCL probes and with Python tracing. Writes what it
# saw under $OUT (default /tmp/gpu-check). Needs root. TCHECK names the binary.
#
#   sudo tools/gpu/gpu-check.sh
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/gpu-check}
tcheck=${TCHECK:-./tcheck-bpf}
python=${PYTHON:-python3}
job=tools/gpu/ddp_nccl_gpu.py
mkdir -p "$out"
{
	echo "kernel $(uname -r)"
	nvidia-smi -L
	"$python" -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "nccl", torch.cuda.nccl.version())'
	ls -la /sys/kernel/btf/vmlinux
	"$tcheck" --version
} >"$out/facts.txt" 2>&1
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null

# 1. Recorded from its start, as README.md shows, and compared with the job's own log.
timeout 240 "$tcheck" record -o "$out/gpu.trace" --python --events "$out/events.jsonl" -- \
	"$python" "$job" --steps 30 --log "$out/truth.json" >"$out/record.out" 2>"$out/record.err"
echo "record exited $?" >>"$out/record.err"
"$tcheck" dump "$out/gpu.trace" >/tmp/gpu-check.jsonl 2>>"$out/record.err"
# The same job with a step marker: torch 2.x builds whose record_function scopes are not
# followed get no step number from the optimizer's scope (record says so).
timeout 240 "$tcheck" record -o "$out/marker.trace" --python --step-marker torch.optim.sgd.SGD.step \
	-- "$python" "$job" --steps 30 --port 29519 >/dev/null 2>"$out/marker.err"
"$tcheck" dump "$out/marker.trace" >/tmp/gpu-check-marker.jsonl 2>>"$out/marker.err"
summarize() {
	"$python" - "$@" <<'PY'
import collections, json, sys
truth = json.load(open(sys.argv[2])) if len(sys.argv) > 2 else {}
sys.stdin = open(sys.argv[1])
calls, scopes, steps, communicators, processes = collections.Counter(), collections.Counter(), set(), [], []
open_calls = 0
for line in sys.stdin:
    record = json.loads(line)
    kind = record.get("kind")
    if kind == "nccl":
        calls[record["name"]] += 1
        open_calls += bool(record.get("open"))
    elif kind in ("torch_scope", "py", "torch_op"):
        scopes[(kind, record["name"].split("#")[0])] += 1
        if record.get("step") is not None:
            steps.add(record["step"])
    elif kind == "communicator":
        communicators.append({k: record.get(k) for k in ("comm_id", "rank", "nranks", "origin")})
    elif kind == "process":
        processes.append({k: record.get(k) for k in ("pid", "rank", "command")})
print(json.dumps({
    "truth": {k: v for k, v in truth.items() if k != "step_ms"},
    "nccl_calls": dict(calls), "open_calls": open_calls,
    "python_events": sum(scopes.values()),
    "optimizer_steps": sum(n for (k, name), n in scopes.items() if name == "Optimizer.step"),
    "top_python": [[k, n, c] for (k, n), c in scopes.most_common(12)],
    "steps_seen": len(steps), "communicators": communicators, "processes": processes[:6],
}, indent=1))
PY
}
summarize /tmp/gpu-check.jsonl "$out/truth.json" >"$out/summary.json"
summarize /tmp/gpu-check-marker.jsonl >"$out/summary-marker.json"

# 2. Attached to mid-run, for three seconds.
"$python" "$job" --steps 30000 --port 29518 >"$out/attach-job.out" 2>&1 &
pid=$!
sleep 12
timeout 60 "$tcheck" attach --pid "$pid" --duration 3 -o "$out/attach.trace" >"$out/attach.out" 2>&1
echo "attach exited $?" >>"$out/attach.out"
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
"$tcheck" dump --calls-only "$out/attach.trace" 2>>"$out/attach.out" |
	"$python" -c 'import collections, json, sys; print(json.dumps(collections.Counter(json.loads(l)["name"] for l in sys.stdin if json.loads(l)["kind"] == "nccl")))' \
		>"$out/attach-calls.json"

# 3. Step time: untraced, NCCL probes only, Python tracing (each 400 steps, the median).
for mode in plain nccl python; do
	case $mode in
	plain) prefix=() ;;
	nccl) prefix=("$tcheck" --quiet record -o /tmp/bench-nccl.trace --) ;;
	python) prefix=("$tcheck" --quiet record --python -o /tmp/bench-python.trace --) ;;
	esac
	timeout 240 "${prefix[@]}" "$python" "$job" --steps 400 --port 2952${#mode} \
		--log "$out/time-$mode.json" >/dev/null 2>>"$out/time.err"
done
"$python" - "$out" >"$out/timing.json" <<'PY'
import json, os, statistics, sys
result = {}
for mode in ("plain", "nccl", "python"):
    path = os.path.join(sys.argv[1], f"time-{mode}.json")
    if os.path.exists(path):
        ms = json.load(open(path))["step_ms"][50:]
        result[mode] = {"median_ms": statistics.median(ms), "steps": len(ms)}
if "plain" in result:
    for mode in ("nccl", "python"):
        if mode in result:
            result[mode]["ratio"] = result[mode]["median_ms"] / result["plain"]["median_ms"]
print(json.dumps(result, indent=1))
PY
ls -la "$out"
