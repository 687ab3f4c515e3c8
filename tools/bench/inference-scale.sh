#!/bin/bash
# SPDX-License-Identifier: MIT
# Inference and checking against trace size, offline and live. Records the
# NCCL test double (8 ranks, tp 2, pp 2, --compute-us 0: the ranks issue
# calls as fast as they can) for growing step counts up to about 10 million
# calls, then times `tcheck-bpf infer` and `tcheck-bpf check --rules` on each
# trace with /usr/bin/time (wall time, peak memory), and measures live
# checking under `record --rules`: calls checked per second and calls lost,
# against the workload's own log of every call it made. Prints a Markdown
# section (make bench-inference puts it into BENCHMARKS.md). Needs root.
#
#   tools/bench/inference-scale.sh [STEPS...]   (default: 63 630 6300 63000)
#   INFERENCE_SCALE_DIR=/big/disk tools/bench/inference-scale.sh
#
# The largest trace takes about 1.6 GB of disk and 6 minutes to record.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TCHECK="$ROOT/tcheck-bpf"
WORKLOAD="$ROOT/.output/tests/nccl-workload"
RULES="$ROOT/rules/nccl-parallel.json"
LAYOUT=(--ranks 8 --tp 2 --pp 2 --compute-us 0)
STEPS=("$@")
[ ${#STEPS[@]} -gt 0 ] || STEPS=(63 630 6300 63000)
LIVE_STEPS=${INFERENCE_SCALE_LIVE_STEPS:-6300}
WORK=${INFERENCE_SCALE_DIR:-/tmp/tcheck-inference-scale}

[ "$(id -u)" -eq 0 ] || { echo "recording loads BPF programs: run as root" >&2; exit 1; }
[ -x "$TCHECK" ] && [ -x "$WORKLOAD" ] || { echo "run make first" >&2; exit 1; }
rm -rf "$WORK"
mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT

# Seconds and peak KB of a command, from /usr/bin/time, into TIME_S and PEAK_KB.
timed() {
	/usr/bin/time -o "$WORK/time" -f "%e %M" "$@"
	read -r TIME_S PEAK_KB <"$WORK/time"
}

calls_made() {
	cat "$1"/rank-*.jsonl | wc -l
}

# The calls a trace should hold by the workload's log: every call made, less
# ncclCommGetAsyncError polls (kept only when they report an error), plus the
# ncclBroadcast that each ncclBcast makes inside NCCL (traced at depth 1).
calls_expected() {
	local made polls nested
	made=$(calls_made "$1")
	polls=$(cat "$1"/rank-*.jsonl | grep -c '"name":"ncclCommGetAsyncError"' || true)
	nested=$(cat "$1"/rank-*.jsonl | grep -c '"name":"ncclBcast"' || true)
	echo $((made - polls + nested))
}

grouped() {
	echo "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'
}

megabytes() {
	awk -v kb="$1" 'BEGIN { printf "%.0f MB", kb / 1024 }'
}

rate() {
	awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.2f M/s", n / s / 1e6; else print "n/a" }'
}

load_before=$(cut -d' ' -f1 /proc/loadavg)
rows=()
for steps in "${STEPS[@]}"; do
	echo "recording $steps steps..." >&2
	"$TCHECK" --quiet record --no-diagnosis -o "$WORK/trace" -- \
		"$WORKLOAD" "${LAYOUT[@]}" --steps "$steps" --log-dir "$WORK/log" >&2
	made=$(calls_made "$WORK/log")
	rm -rf "$WORK/log"
	size=$(stat -c %s "$WORK/trace")
	echo "inferring from $made calls..." >&2
	timed "$TCHECK" infer -o "$WORK/rules.json" "$WORK/trace" 2>"$WORK/infer.txt"
	events=$(sed -n 's/.*: \([0-9]*\) events from.*/\1/p' "$WORK/infer.txt")
	invariants=$(sed -n 's/.*: \([0-9]*\) invariants in.*/\1/p' "$WORK/infer.txt")
	infer_s=$TIME_S infer_kb=$PEAK_KB
	echo "checking..." >&2
	status=0
	timed "$TCHECK" check --rules "$RULES" "$WORK/trace" >"$WORK/check.txt" 2>&1 || status=$?
	[ "$status" -le 1 ] || { cat "$WORK/check.txt" >&2; exit 1; }
	violations=$(sed -n 's/.*rules: \([0-9]*\) violation.*/\1/p' "$WORK/check.txt")
	rows+=("| $(grouped "$events") | $(awk -v b="$size" 'BEGIN { printf "%.0f MB", b / 1048576 }') | ${infer_s} s | $(megabytes "$infer_kb") | $invariants | ${TIME_S} s | $(megabytes "$PEAK_KB") | $(rate "$events" "$TIME_S") | $violations |")
	rm -f "$WORK/trace" "$WORK/rules.json"
done

# Live: the same workload recorded with and without --rules; the workload's
# log is the truth of the calls made, the difference is what was lost.
echo "live, untraced, $LIVE_STEPS steps..." >&2
timed "$WORKLOAD" "${LAYOUT[@]}" --steps "$LIVE_STEPS" --log-dir "$WORK/log" >/dev/null
made=$(calls_made "$WORK/log")
live_rows=("| untraced workload | $(grouped "$made") | n/a | n/a | ${TIME_S} s | $(rate "$made" "$TIME_S") | $(megabytes "$PEAK_KB") | n/a |")
rm -rf "$WORK/log"
for mode in plain rules; do
	echo "live, $mode, $LIVE_STEPS steps..." >&2
	extra=()
	[ "$mode" = rules ] && extra=(--rules "$RULES")
	timed "$TCHECK" record --no-diagnosis "${extra[@]}" -o "$WORK/live.trace" -- \
		"$WORKLOAD" "${LAYOUT[@]}" --steps "$LIVE_STEPS" --log-dir "$WORK/log" \
		>"$WORK/live.txt" 2>&1
	made=$(calls_made "$WORK/log")
	recorded=$(sed -n 's/.*: \([0-9]*\) NCCL calls recorded.*/\1/p' "$WORK/live.txt")
	checked=$(sed -n 's/.*: \([0-9]*\) events checked live.*/\1/p' "$WORK/live.txt")
	violations=$(sed -n 's/.*rules: \([0-9]*\) violation.*/\1/p' "$WORK/live.txt")
	lost=$(($(calls_expected "$WORK/log") - recorded))
	if [ "$mode" = rules ]; then
		live_rows+=("| \`record --rules\` | $(grouped "$made") | $(grouped "$checked") | $lost | ${TIME_S} s | $(rate "$checked" "$TIME_S") | $(megabytes "$PEAK_KB") | $violations |")
	else
		live_rows+=("| \`record\` | $(grouped "$made") | n/a | $lost | ${TIME_S} s | $(rate "$recorded" "$TIME_S") | $(megabytes "$PEAK_KB") | n/a |")
	fi
	rm -rf "$WORK/log" "$WORK/live.trace"
done

cat <<EOF
## Invariant inference and checking

Traces of the NCCL test double (8 ranks, tp 2, pp 2, \`--compute-us 0\`,
${STEPS[*]} steps) recorded with \`tcheck-bpf record\`; times are wall clock and
peak resident memory from \`/usr/bin/time -f "%e %M"\` of
\`tcheck-bpf infer -o rules.json TRACE\` and of
\`tcheck-bpf check --rules rules/nccl-parallel.json TRACE\`, one run each on
the 2-core VM shared with other work (load average $load_before at the start,
$(cut -d' ' -f1 /proc/loadavg) at the end; \`tools/bench/inference-scale.sh\`,
\`make bench-inference\`).

| events | trace | infer | infer peak memory | invariants | check | check peak memory | check throughput | violations |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|
$(printf '%s\n' "${rows[@]}")

Inference keeps every call as a compact event (about 100 bytes: names,
values and field lists are interned and shared) plus a few pointers for
sorting, so memory grows linearly at about 130 bytes an event; time grows a
little faster than linearly (the sorts). Checking keeps only open
cross-rank groups and the current step per process: its memory stays flat.

Live, the same workload for $LIVE_STEPS steps, recorded without and with
\`--rules rules/nccl-parallel.json\` (every call checked as it arrives through
the recorder), and untraced; calls made are the workload's own log; lost is
the calls the trace should hold by that log (less the \`ncclCommGetAsyncError\`
polls the probes keep only on error, plus the \`ncclBroadcast\` inside each
\`ncclBcast\`) minus those recorded:

| run | calls made | checked live | lost | wall time | calls/s | peak memory | violations |
|---|---:|---:|---:|---:|---:|---:|---:|
$(printf '%s\n' "${live_rows[@]}")

The workload issues calls as fast as its 8 ranks can on 2 cores, so the
live rate is the workload's own pace with the tracer attached: checking
adds its cost to the recorder's thread, and a ring buffer that overflowed
would show as lost calls.
EOF
