#!/bin/bash
# SPDX-License-Identifier: MIT
# Step time of a DDP job with NCCL on the GPU (tools/gpu/ddp_nccl_gpu.py),
# untraced and under each of the recorder's modes: NCCL probes only (`record`),
# `record --python`, and the deploy mode (`--rules` of a `--python` reference
# run of the same job, and `--rules` of `infer --torch-level`). Runs are
# interleaved round by round and each traced run is divided by the untraced run
# of its own round; the figures are medians over rounds. After the rounds, one
# more run of each traced mode counts the kernel's runs of the recorder's BPF
# programs a steady step (bpf_stats), and what the deploy runs found is shown
# (the job is healthy: any violation is a false alarm). The uprobe floor (an
# empty entry and return pair on the NCCL test double) is measured before and
# after the rounds. Prints a Markdown section; with OUT set, keeps the
# recorders' messages there. Needs root.
#
#   sudo tools/gpu/gpu-bench.sh                       # on a GPU machine
#   sudo GPU_JOB_OPTIONS=--cpu PYTHON=/usr/bin/python3 tools/gpu/gpu-bench.sh   # a try on the CPU
#
# Knobs: GPU_BENCH_ROUNDS (default 3), GPU_BENCH_STEPS (default 1000), TCHECK,
# PYTHON, GPU_JOB_OPTIONS. Each run of the job takes about 15 s on an H200
# (torch's and CUDA's start, mostly), and there are 5 a round and 5 more: the
# defaults take about 6 minutes, one round of 500 steps under 3.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tools/bench/probe-counts.sh
source "$root/tools/bench/probe-counts.sh"
tcheck=${TCHECK:-$root/tcheck-bpf}
python=${PYTHON:-python3}
rounds=${GPU_BENCH_ROUNDS:-3}
steps=${GPU_BENCH_STEPS:-1000}
job_options=${GPU_JOB_OPTIONS:-}
job=$root/tools/gpu/ddp_nccl_gpu.py
first_steady_step=100
out=${OUT:-}
modes=(untraced nccl python deploy torchlevel)
scratch=$(mktemp -d /tmp/tcheck-gpubench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
port=29600

# The recorder's options of a traced mode.
record_options() {
	case $1 in
	nccl) ;;
	python) echo "--python" ;;
	deploy) echo "--rules $scratch/job.rules" ;;
	torchlevel) echo "--rules $scratch/job.torch.rules" ;;
	esac
}

# run_job MODE LOG MESSAGES STEPS [JOB OPTION...]: one run of the job, its
# step times in LOG, the recorder's messages in MESSAGES and what it found
# live (hangs, slowdowns, violations) in MESSAGES.events.
run_job() {
	local mode=$1 log=$2 messages=$3 run_steps=$4 options started=$SECONDS
	shift 4
	port=$((port + 1))
	options=$(record_options "$mode")
	rm -f "$scratch/t.trace"
	if [ "$mode" = untraced ]; then
		# shellcheck disable=SC2086 # job_options are words
		"$python" "$job" --steps "$run_steps" --port "$port" --log "$log" $job_options "$@" \
			>/dev/null 2>"$messages"
	else
		# shellcheck disable=SC2086 # options are words
		"$tcheck" record -o "$scratch/t.trace" --events "$messages.events" $options -- \
			"$python" "$job" --steps "$run_steps" --port "$port" --log "$log" $job_options "$@" \
			>/dev/null 2>"$messages"
	fi
	echo "gpu-bench: $mode, $run_steps steps: $((SECONDS - started)) s" >&2
}

# Median step time (ms) over the steady steps, from the job's own log.
step_time() {
	"$python" -c 'import json, statistics, sys
ms = json.load(open(sys.argv[1]))["step_ms"][int(sys.argv[2]):]
print(f"{statistics.median(ms):.4f}")' "$1" "$first_steady_step"
}

# probe_runs_per_step MODE: the kernel's runs of the recorder's BPF programs
# between two steady steps of one more run, over the steps between them.
probe_runs_per_step() {
	local mode=$1 options
	options=$(record_options "$mode")
	port=$((port + 1))
	rm -f "$scratch/runs.trace" "$scratch/progress"
	# shellcheck disable=SC2086 # options and job_options are words
	recorder_runs_per_step progress_step "$first_steady_step" $((steps - 2)) \
		"$tcheck" --quiet record -o "$scratch/runs.trace" $options -- "$python" "$job" \
		--steps "$steps" --port "$port" --progress "$scratch/progress" $job_options
}

# The last step the job finished (its --progress file), or nothing.
progress_step() {
	tail -n 1 "$scratch/progress" 2>/dev/null || true
}

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

# The deploy mode's rules, from a --python reference run of the same job.
run_job python "$scratch/reference.json" "$scratch/reference.messages" 60
cp "$scratch/t.trace" "$scratch/reference.trace"
"$tcheck" --quiet infer -o "$scratch/job.rules" "$scratch/reference.trace"
"$tcheck" --quiet infer --torch-level -o "$scratch/job.torch.rules" "$scratch/reference.trace"

floor_before=$(uprobe_floor "$root" "$scratch")
for ((round = 0; round < rounds; round++)); do
	for mode in "${modes[@]}"; do
		run_job "$mode" "$scratch/$mode-$round.json" "$scratch/$mode-$round.messages" "$steps"
		step_time "$scratch/$mode-$round.json" >"$scratch/$mode-$round.ms"
	done
done
floor_after=$(uprobe_floor "$root" "$scratch")
for mode in "${modes[@]:1}"; do
	probe_runs_per_step "$mode" >"$scratch/$mode.runs"
done
if [ -n "$out" ]; then
	mkdir -p "$out/gpu-bench"
	cp "$scratch"/*.messages "$scratch"/*.events "$scratch"/*.rules "$out/gpu-bench/"
fi

# Per round: traced over the same round's untraced run; then the median.
ratio() {
	for ((round = 0; round < rounds; round++)); do
		awk -v t="$(cat "$scratch/$1-$round.ms")" -v u="$(cat "$scratch/untraced-$round.ms")" \
			'BEGIN { printf "%.4f\n", t / u }'
	done | median
}
label() {
	case $1 in
	nccl) echo "\`record\` (NCCL probes)" ;;
	python) echo "\`record --python\`" ;;
	deploy) echo "\`record --rules\` (deploy: the rules of a \`--python\` run)" ;;
	torchlevel) echo "\`record --rules\` of \`infer --torch-level\`" ;;
	esac
}
# What a mode's runs found live, over its rounds: "N violations, M hangs, ...";
# not known where a run left no events file.
findings() {
	local round
	for ((round = 0; round < rounds; round++)); do
		[ -f "$scratch/$1-$round.messages.events" ] ||
			{ echo "not known: run $round wrote no events"; return; }
	done
	cat "$scratch/$1"-*.messages.events | "$python" -c 'import collections, json, sys
kinds = collections.Counter(json.loads(line).get("kind") for line in sys.stdin if line.strip())
print(", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) or "none")'
}
rules_in() {
	"$python" -c 'import json, sys
try:
    print(len(json.load(open(sys.argv[1])).get("rules", [])))
except Exception:
    print("-")' "$1"
}

echo "### On a GPU: step time of a DDP job under each mode"
echo
echo "Command: \`tools/gpu/gpu-bench.sh\`, $(date -u '+%Y-%m-%d %H:%M UTC'), kernel $(uname -r),"
echo "$(nproc) CPUs; $("$python" -c 'import sys, torch; print("Python", sys.version.split()[0] + ", torch", torch.__version__)')"
echo "${job_options:+($job_options) }$rounds rounds of $steps steps; uprobe floor (an empty entry and return probe pair on the"
echo "NCCL test double's ncclAllReduce) $floor_before ns before the rounds and $floor_after ns after."
echo "Rules of the deploy rows: $(rules_in "$scratch/job.rules") (\`infer\`) and"
echo "$(rules_in "$scratch/job.torch.rules") (\`infer --torch-level\`), from a \`record --python\` run of 60 steps."
echo
echo "| Mode | step time (ms) | vs untraced | probe runs per step | found live, all rounds |"
echo "|---|---:|---:|---:|---:|"
echo "| untraced | $(cat "$scratch"/untraced-*.ms | median) | 1.000 | - | - |"
for mode in "${modes[@]:1}"; do
	echo "| $(label "$mode") | $(cat "$scratch/$mode"-*.ms | median) | $(ratio "$mode") |" \
		"$(cat "$scratch/$mode.runs") | $(findings "$mode") |"
done
