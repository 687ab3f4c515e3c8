#!/bin/bash
# Cost of one C-to-Python entry (map() calling a Python function with four
# primitive arguments) untraced and traced: the function ignored (the probe
# pair and one verdict lookup), and selected (arguments and callers read at
# entry, one record sent). Interleaved run by run. Prints a Markdown section.
# TCHECK=path compares another build; PYTHON=path another interpreter.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tcheck=${TCHECK:-$root/tcheck-bpf}
python=${PYTHON:-/usr/bin/python3.11}
calls=${ENTRY_BENCH_CALLS:-50000}
rounds=${ENTRY_BENCH_ROUNDS:-7}
scratch=$(mktemp -d /tmp/tcheck-entrybench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT

# The workload: best of 5 timed map() passes, nanoseconds per call.
cat >"$scratch/entry_bench.py" <<'PY'
import sys, time
def entry(count, scale, label, enabled):
    return count
def measure(calls):
    ints = list(range(calls))
    floats = [0.5] * calls
    labels = ["step"] * calls
    flags = [True] * calls
    best = None
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in map(entry, ints, floats, labels, flags):
            pass
        elapsed = time.perf_counter_ns() - start
        best = elapsed if best is None else min(best, elapsed)
    return best / calls
print(f"{measure(int(sys.argv[1])):.1f}")
PY

run() {
	local mode=$1 round=$2 out="$scratch/$1-$2.ns"
	case $mode in
	untraced) "$python" "$scratch/entry_bench.py" "$calls" >"$out" ;;
	ignored) "$tcheck" --quiet record -o "$scratch/t.trace" --python-filter no.such.module. -- \
		"$python" "$scratch/entry_bench.py" "$calls" >"$out" ;;
	selected) "$tcheck" --quiet record -o "$scratch/t.trace" --python-filter entry_bench.entry -- \
		"$python" "$scratch/entry_bench.py" "$calls" >"$out"
		"$tcheck" dump "$scratch/t.trace" --calls-only | grep -c '"name":"entry_bench.entry"' \
			>"$scratch/$mode-$round.events" || true ;;
	esac
}

for ((round = 0; round < rounds; round++)); do
	for mode in untraced ignored selected; do
		run "$mode" "$round"
	done
done
median() { sort -g "$@" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(cat "$scratch"/untraced-*.ns | median)
echo "### Python tracing: cost of one C-to-Python entry"
echo
echo "Command: \`tools/bench/python-entry-cost.sh\` (in \`make bench\`), $(date -u '+%Y-%m-%d %H:%M UTC'),"
echo "kernel $(uname -r), $(nproc) CPUs, $("$python" -c 'import platform; print("Python", platform.python_version())')."
echo
echo "\`map(entry, ints, floats, strs, bools)\`: $calls calls of a Python function with four"
echo "primitive arguments, entered from C each time; best of 5 passes per run, median of"
echo "$rounds interleaved runs."
echo
echo "| Variant | ns per call | added per entry (ns) |"
echo "|---|---:|---:|"
echo "| untraced | $base | - |"
for mode in ignored selected; do
	ns=$(cat "$scratch"/$mode-*.ns | median)
	label="--python, function not selected"
	[ "$mode" = selected ] && label="--python, function selected ($(cat "$scratch"/$mode-*.events | median) events of $((calls * 5)))"
	awk -v ns="$ns" -v base="$base" -v label="$label" \
		'BEGIN { printf "| %s | %s | %.0f |\n", label, ns, ns - base }'
done
echo
echo "Not selected: the entry probe and one verdict lookup (on a kernel with uprobe"
echo "sessions, 6.13 and later; the uprobe/uretprobe pair on older ones). Selected: also"
echo "the return probe,"
echo "the four arguments (one read of the argument slots, then type and value per"
echo "argument), the callers' code objects (one read per frame) and one ring-buffer"
echo "record per call; the daemon names the function and its callers once. On a"
echo "shared machine the runs scatter by a microsecond or more: compare medians, and"
echo "the selected row with the not-selected one of the same table."
