#!/bin/bash
# Training-step time of the CPU training workload, untraced and traced with
# --python (default selection, and everything selectable), interleaved run by
# run so the machine's drift reaches all alike. Prints a Markdown section.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tcheck="$root/tcheck-bpf"
workload="$root/tests/workloads/python/train_cpu.py"
steps=${PYTHON_BENCH_STEPS:-300}
rounds=${PYTHON_BENCH_ROUNDS:-3}
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
	local mode=$1 round=$2 log="$scratch/$1-$2.jsonl"
	case $mode in
	untraced) /usr/bin/python3 "$workload" --steps "$steps" --no-module-hooks --log "$log" >/dev/null ;;
	default) "$tcheck" --quiet record -o "$scratch/t.trace" --python -- /usr/bin/python3 \
		"$workload" --steps "$steps" --no-module-hooks --log "$log" >/dev/null ;;
	everything) "$tcheck" --quiet record -o "$scratch/t.trace" --python-filter "" -- \
		/usr/bin/python3 "$workload" --steps "$steps" --no-module-hooks --log "$log" >/dev/null ;;
	esac
	step_time "$log" >"$scratch/$mode-$round.us"
	if [ "$mode" != untraced ]; then
		"$tcheck" dump "$scratch/t.trace" --calls-only | wc -l >"$scratch/$mode-$round.events"
	fi
}

for ((round = 0; round < rounds; round++)); do
	for mode in untraced default everything; do
		run "$mode" "$round"
	done
done
median() { sort -g "$@" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(cat "$scratch"/untraced-*.us | median)
echo "### Python tracing: training-step time"
echo
echo "Command: \`make bench\` (tools/bench/python-overhead.sh), $(date -u '+%Y-%m-%d %H:%M UTC'),"
echo "kernel $(uname -r), $(nproc) CPUs."
echo
echo "\`tests/workloads/python/train_cpu.py --steps $steps --no-module-hooks\` under Debian's"
echo "python3.11 and torch 1.13 (CPU); median step time over steps 10 on, median of $rounds"
echo "interleaved runs; events = Python calls and torch scopes in the trace."
echo
echo "| Variant | step time (us) | added per step (us) | vs untraced | events per step |"
echo "|---|---:|---:|---:|---:|"
echo "| untraced | $base | - | 1.000 | - |"
for mode in default everything; do
	us=$(cat "$scratch"/$mode-*.us | median)
	events=$(cat "$scratch"/$mode-*.events | median)
	awk -v us="$us" -v base="$base" -v events="$events" -v steps="$steps" -v mode="$mode" \
		'BEGIN { printf "| --python (%s) | %s | %.1f | %.3f | %.1f |\n", mode == "default" ? "default selection" : "everything selected", us, us - base, us / base, events / steps }'
done
echo
echo "Every call CPython enters from C takes the probe pair, selected or not (this"
echo "small model's step enters Python from C about 320 times), and torch's"
echo "RecordFunction::end, probed for scope exits, begins with an instruction the"
echo "kernel single-steps. The added time per step is what to weigh against a real"
echo "model's step time."
