#!/bin/bash
# Cost of one C-to-Python entry (map() calling a Python function with four
# primitive arguments) untraced and traced: the function ignored (the probe
# and one verdict lookup), and selected (arguments and callers read at
# entry, one record sent). Interleaved run by run, on each interpreter: Debian
# 12's python3.11, and Debian trixie's python3.13 where its root is built.
# Prints a Markdown section.
# TCHECK=path measures another build; BASELINE=path adds the rows of a second
# build (an earlier commit) measured in the same rounds; PYTHON=path measures
# that interpreter alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tcheck=${TCHECK:-$root/tcheck-bpf}
baseline=${BASELINE:-}
calls=${ENTRY_BENCH_CALLS:-50000}
rounds=${ENTRY_BENCH_ROUNDS:-7}
scratch=$(mktemp -d /tmp/tcheck-entrybench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
# name|label|the command that runs Python
if [ -n "${PYTHON:-}" ]; then
	interpreters=("custom|$PYTHON|$PYTHON")
else
	interpreters=("3.11|Debian 12's python3.11|/usr/bin/python3.11")
	torch2_root=${TCHECK_TORCH2_ROOT:-/var/cache/tcheck-bpf/trixie-torch}
	[ -f "$torch2_root/.tcheck-ready" ] &&
		interpreters+=("3.13|Debian trixie's python3.13, chrooted|$root/tools/stacks/in-root.sh $torch2_root --share /tmp -- /usr/bin/python3")
fi
builds=("this|$tcheck")
[ -n "$baseline" ] && builds+=("baseline|$baseline")

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
	local stack=$1 python=$2 build=$3 binary=$4 mode=$5 round=$6 out
	out="$scratch/$stack-$build-$mode-$round.ns"
	# record refuses to replace a trace without --force (which older builds lack).
	rm -f "$scratch/t.trace"
	# shellcheck disable=SC2086 # the interpreter's command is words
	case $mode in
	untraced) $python "$scratch/entry_bench.py" "$calls" >"$out" ;;
	ignored) "$binary" --quiet record -o "$scratch/t.trace" --python-filter no.such.module. -- \
		$python "$scratch/entry_bench.py" "$calls" >"$out" 2>/dev/null ;;
	selected) "$binary" --quiet record -o "$scratch/t.trace" --python-filter entry_bench.entry -- \
		$python "$scratch/entry_bench.py" "$calls" >"$out" 2>/dev/null
		"$binary" dump "$scratch/t.trace" --calls-only | grep -c '"name":"entry_bench.entry"' \
			>"$scratch/$stack-$build-$mode-$round.events" || true ;;
	esac
}

for ((round = 0; round < rounds; round++)); do
	for interpreter in "${interpreters[@]}"; do
		IFS='|' read -r stack _ python <<<"$interpreter"
		run "$stack" "$python" none none untraced "$round"
		for build in "${builds[@]}"; do
			IFS='|' read -r name binary <<<"$build"
			for mode in ignored selected; do
				run "$stack" "$python" "$name" "$binary" "$mode" "$round"
			done
		done
	done
done
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "### Python tracing: cost of one C-to-Python entry"
echo
echo "Command: \`tools/bench/python-entry-cost.sh\` (in \`make bench\`), $(date -u '+%Y-%m-%d %H:%M UTC'),"
echo "kernel $(uname -r), $(nproc) CPUs."
echo
echo "\`map(entry, ints, floats, strs, bools)\`: $calls calls of a Python function with four"
echo "primitive arguments, entered from C each time; best of 5 passes per run, median of"
echo "$rounds interleaved runs."
[ -n "$baseline" ] && echo "\"Earlier build\" rows: \`$baseline\`, measured in the same rounds."
echo
echo "| Interpreter | Variant | ns per call | added per entry (ns) |"
echo "|---|---|---:|---:|"
for interpreter in "${interpreters[@]}"; do
	IFS='|' read -r stack label _ <<<"$interpreter"
	base=$(cat "$scratch/$stack"-none-untraced-*.ns | median)
	echo "| $label | untraced | $base | - |"
	for build in "${builds[@]}"; do
		IFS='|' read -r name _ <<<"$build"
		prefix=""
		[ "$name" = baseline ] && prefix="earlier build: "
		for mode in ignored selected; do
			ns=$(cat "$scratch/$stack-$name-$mode"-*.ns | median)
			variant="${prefix}--python, function not selected"
			[ "$mode" = selected ] && variant="${prefix}--python, function selected ($(cat "$scratch/$stack-$name-$mode"-*.events | median) events of $((calls * 5)))"
			awk -v ns="$ns" -v base="$base" -v label="$label" -v variant="$variant" \
				'BEGIN { printf "| %s | %s | %s | %.0f |\n", label, variant, ns, ns - base }'
		done
	done
done
echo
echo "Not selected: the entry probe and one verdict lookup (on a kernel with uprobe"
echo "sessions, 6.13 and later; the uprobe/uretprobe pair on older ones). Selected: also"
echo "the return probe,"
echo "the four arguments (one read of the argument slots, then type and value per"
echo "argument), the callers' code objects (one read per frame) and one ring-buffer"
echo "record per call; the daemon names the function and its callers once. The probe"
echo "sits on the evaluator's first instruction the kernel emulates: past the endbr64"
echo "that opens it in a build with CET (python3.13 here), which the kernel would"
echo "single-step out of line. On a"
echo "shared machine the runs scatter by a microsecond or more: compare medians, and"
echo "the selected row with the not-selected one of the same table."
