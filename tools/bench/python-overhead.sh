#!/bin/bash
# Training-step time of the CPU training workload, untraced and traced with
# --python (default selection, and everything selectable), interleaved run by
# run so the machine's drift reaches all alike. Prints a Markdown section.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tcheck="$root/tcheck-bpf"
workload="$root/tests/workloads/python/train_cpu.py"
rounds=${PYTHON_BENCH_ROUNDS:-3}
# The benchmark model: hidden layers of 512, batches of 64 (a step of tens of
# ms on these CPUs); and the tests' tiny model, where per-call costs show most.
models=("benchmark:--hidden 512 --batch-size 64:${PYTHON_BENCH_STEPS:-60}"
	"tiny:--hidden 32 --batch-size 8:${PYTHON_BENCH_TINY_STEPS:-300}")
scratch=$(mktemp -d /tmp/tcheck-pybench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

/usr/bin/python3 -c 'import torch' 2>/dev/null || {
	echo "(skipped: Debian's python3-torch is not installed)"
	exit 0
}

# Median step time in microseconds from the script's own log (steps 10 on: warm).
step_time() {
	python3 - "$1" <<'PY'
import json, statistics, sys
starts = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "api" and r.get("stage") == "train":
        starts.setdefault(r["step"], r["ts_ns"])
steps = sorted(starts)
gaps = [(starts[b] - starts[a]) / 1000 for a, b in zip(steps, steps[1:]) if a >= 10]
print(f"{statistics.median(gaps):.1f}")
PY
}

run() {
	local mode=$1 round=$2 model=$3 steps=$4 shape=$5 log="$scratch/$3-$1-$2.jsonl"
	# shellcheck disable=SC2206 # shape is a list of options
	local command=(/usr/bin/python3 "$workload" --steps "$steps" $shape --no-module-hooks --log "$log")
	case $mode in
	untraced) "${command[@]}" >/dev/null ;;
	default) "$tcheck" --quiet record -o "$scratch/t.trace" --python -- "${command[@]}" >/dev/null ;;
	everything) "$tcheck" --quiet record -o "$scratch/t.trace" --python-filter "" -- \
		"${command[@]}" >/dev/null ;;
	esac
	step_time "$log" >"$scratch/$model-$mode-$round.us"
	if [ "$mode" != untraced ]; then
		"$tcheck" dump "$scratch/t.trace" --calls-only | wc -l >"$scratch/$model-$mode-$round.events"
	fi
}

for ((round = 0; round < rounds; round++)); do
	for entry in "${models[@]}"; do
		IFS=: read -r model shape steps <<<"$entry"
		for mode in untraced default everything; do
			run "$mode" "$round" "$model" "$steps" "$shape"
		done
	done
done
median() { sort -g "$@" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "### Python tracing: training-step time"
echo
echo "Command: \`make bench\` (tools/bench/python-overhead.sh), $(date -u '+%Y-%m-%d %H:%M UTC'),"
echo "kernel $(uname -r), $(nproc) CPUs."
echo
echo "\`tests/workloads/python/train_cpu.py\` (a 3-layer MLP, SGD with momentum,"
echo "\`--no-module-hooks\`) under Debian's python3.11 and torch 1.13 (CPU); median step"
echo "time over steps 10 on, median of $rounds interleaved runs; events = Python calls and"
echo "torch scopes in the trace, per step. The target (at most 2% for the default"
echo "selection) is for the benchmark model; the tiny model shows the cost per step in"
echo "isolation."
echo
echo "| Model | Variant | step time (us) | added per step (us) | vs untraced | events per step |"
echo "|---|---|---:|---:|---:|---:|"
for entry in "${models[@]}"; do
	IFS=: read -r model shape steps <<<"$entry"
	base=$(cat "$scratch"/$model-untraced-*.us | median)
	echo "| $model (\`$shape\`) | untraced | $base | - | 1.000 | - |"
	for mode in default everything; do
		us=$(cat "$scratch"/$model-$mode-*.us | median)
		events=$(cat "$scratch"/$model-$mode-*.events | median)
		awk -v us="$us" -v base="$base" -v events="$events" -v steps="$steps" -v mode="$mode" \
			-v model="$model" 'BEGIN { printf "| %s | --python (%s) | %s | %.1f | %.3f | %.1f |\n", model, mode == "default" ? "default selection" : "everything selected", us, us - base, us / base, events / steps }'
	done
done
echo
echo "Every call CPython enters from C takes the probe pair, selected or not (the"
echo "step enters Python from C a few hundred times); ignored code objects cost one"
echo "map lookup and send nothing. Scope exits are probed on the conditional jump"
echo "after RecordFunction::end's first compare, which the kernel emulates, rather"
echo "than on the compare, which it would single-step around every autograd node."
