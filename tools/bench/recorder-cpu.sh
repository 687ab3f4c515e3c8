#!/bin/bash
# The recorder's own CPU time while it records a short torch job with
# `record --python` (tests/workloads/python/healthy_shapes/ddp_world.py,
# gloo, 10 steps) at 1 and 4 ranks: what a busy node must spare so that the
# recorder keeps up, and the Python calls it lost when it fell behind.
# Prints a Markdown section for BENCHMARKS.md. Root.
#   [BASELINE=DIR] tools/bench/recorder-cpu.sh [TCHECK_BINARY] [RUNS]
# BASELINE: the root of another build, measured the same way after this one.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tcheck=${1:-$root/tcheck-bpf}
runs=${2:-5}
python=/usr/bin/python3
workload=$root/tests/workloads/python/healthy_shapes/ddp_world.py
work=$(mktemp -d /tmp/tcheck-recorder-cpu.XXXXXX)
trap 'rm -rf "$work"' EXIT
ticks_per_second=$(getconf CLK_TCK)

# One recording by $tcheck: "RECORDER_TICKS WALL_MS LOST", the recorder process's own CPU
# ticks (the job's are not counted), the recording's wall time, the Python calls it lost.
measure() {
	local ranks=$1 trace=$work/run.trace pid last="" start end lost
	rm -rf "$trace" "$work/log"
	start=$(date +%s%N)
	"$tcheck" record -o "$trace" --python -- "$python" "$workload" --world-size "$ranks" \
		--steps 10 --log-dir "$work/log" >"$work/out.txt" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		read -r -a stat <"/proc/$pid/stat" 2>/dev/null && last=$((stat[13] + stat[14]))
		sleep 0.05
	done
	wait "$pid" || { echo "recording failed: $(tail -3 "$work/out.txt")" >&2; exit 1; }
	end=$(date +%s%N)
	lost=$(grep -o '[0-9]* Python calls are not in the trace' "$work/out.txt" | cut -d' ' -f1 || true)
	echo "$last $(((end - start) / 1000000)) ${lost:-0}"
}

# table BINARY LABEL: one table row per world size.
table() {
	local binary=$1 label=$2 cpu wall lost ticks wall_ms run_lost median_cpu median_wall
	echo "$label:"
	echo
	echo "| ranks | recorder CPU, median (s) | recorder CPU, each run (s) | wall, median (s) | Python calls lost (all runs) |"
	echo "|---:|---:|---|---:|---:|"
	for ranks in 1 4; do
		cpu=() wall=() lost=0
		for ((i = 0; i < runs; i++)); do
			read -r ticks wall_ms run_lost < <(tcheck=$binary measure "$ranks")
			cpu+=("$(awk -v t="$ticks" -v hz="$ticks_per_second" 'BEGIN { printf "%.2f", t / hz }')")
			wall+=("$(awk -v m="$wall_ms" 'BEGIN { printf "%.1f", m / 1000 }')")
			lost=$((lost + run_lost))
		done
		median_cpu=$(printf '%s\n' "${cpu[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
		median_wall=$(printf '%s\n' "${wall[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
		echo "| $ranks | $median_cpu | ${cpu[*]} | $median_wall | $lost |"
	done
	echo
}

echo "Command: \`sudo ${BASELINE:+BASELINE=DIR }tools/bench/recorder-cpu.sh\` ($runs runs per world size; machine: $(nproc) CPUs, kernel $(uname -r); $(date -u +%Y-%m-%d)). The recorder's CPU is read from /proc/PID/stat until it exits; the job runs on the same CPUs."
echo
table "$tcheck" "This build"
if [ -n "${BASELINE:-}" ]; then
	table "$BASELINE/tcheck-bpf" "Baseline ($(git -C "$BASELINE" log -1 --format=%h 2>/dev/null || echo "$BASELINE"))"
fi
