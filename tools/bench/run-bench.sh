#!/bin/bash
# `make bench`: measures what tracing an NCCL call costs and updates BENCHMARKS.md.
#
# Measures the added cost of one traced NCCL call against an empty uprobe
# pair and an LD_PRELOAD interposer, and the event rate the recorder
# sustains without drops, with its CPU and memory. Ratios are only taken
# between figures of one run. Knobs (environment): BENCH_CALLS (calls per
# round, default 50000), BENCH_ROUNDS (default 21), BENCH_LOAD_SECONDS
# (length of each event-rate run, default 3), BENCH_JOB_STEPS (steps of the
# 2-rank job the BPF statistics are also read on, default 2000), REAL_NCCL (path of a real
# libnccl.so.2, default /usr/local/cuda/lib/libnccl.so.2), BASELINE (the root of
# another build, main's say: its tcheck-bpf is measured in the same rounds and
# its BPF programs in the same session).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
TCHECK=$ROOT/tcheck-bpf
BENCH_BIN=$ROOT/.output/tests/bench
CALL_BENCH=$BENCH_BIN/nccl-call-bench
PROBE_FLOOR=$BENCH_BIN/probe-floor
INTERPOSER=$BENCH_BIN/libnccl-interposer.so
NCCL_DOUBLE=$ROOT/.output/tests/lib/libnccl.so.2
REAL_NCCL=${REAL_NCCL:-/usr/local/cuda/lib/libnccl.so.2}
CALLS=${BENCH_CALLS:-50000}
ROUNDS=${BENCH_ROUNDS:-21}
LOAD_SECONDS=${BENCH_LOAD_SECONDS:-3}
# Steps of the 2-rank job whose calls the BPF statistics are also read on.
JOB_STEPS=${BENCH_JOB_STEPS:-2000}
LOAD_PROCESSES=2
LOAD_THREADS=2
# After full speed, when it had drops: offered rates tried, highest first, until one has none.
LOAD_RATES=(400000 200000 100000)
# Then always: a moderate and a typical load, for the recorder's CPU cost.
PACED_RATES=(200000 50000)
# sizeof(struct interposed_call) in tools/bench/nccl-interposer.c.
INTERPOSER_RECORD_BYTES=88
BASELINE=${BASELINE:-}
BASELINE_TCHECK=${BASELINE:+$BASELINE/tcheck-bpf}
RESULTS=$ROOT/BENCHMARKS.md
BEGIN_MARKER='<!-- nccl-probe-cost:begin -->'
END_MARKER='<!-- nccl-probe-cost:end -->'
# One row per run, kept: each run's floor beside its ratio, so a run whose floor
# was high (which hides the programs' own cost) is read as such.
HISTORY_MARKER='<!-- nccl-probe-cost:history -->'
CLOCK_TICKS=$(getconf CLK_TCK)

# shellcheck source=tools/bench/processes.sh
source "$ROOT/tools/bench/processes.sh"
SCRATCH=$(mktemp -d /tmp/tcheck-bench.XXXXXX)
BACKGROUND_PIDS=()
SAVED_BPF_STATS=
BENCH_ENV=()

cleanup() {
	stop_processes "${BACKGROUND_PIDS[@]}"
	[ -z "$SAVED_BPF_STATS" ] || sysctl -qw kernel.bpf_stats_enabled="$SAVED_BPF_STATS" || true
	rm -rf "$SCRATCH"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	echo "bench: FAILED: $*" >&2
	exit 1
}

step() {
	printf '  %-58s' "$*"
}

# A caveat printed under the tables.
note() {
	echo "$*" >>"$SCRATCH/notes"
	echo "bench: note: $*" >&2
}

forget_pid() {
	local kept=() pid
	for pid in "${BACKGROUND_PIDS[@]}"; do
		[ "$pid" = "$1" ] || kept+=("$pid")
	done
	BACKGROUND_PIDS=("${kept[@]}")
}

# Waits up to 60 s for text in a file written by a process that must stay alive.
wait_for_text() {
	local file=$1 text=$2 pid=$3 deadline=$((SECONDS + 60))
	until grep -q "$text" "$file" 2>/dev/null; do
		kill -0 "$pid" 2>/dev/null || fail "process $pid ended before saying '$text': $(cat "$file")"
		[ $SECONDS -lt $deadline ] || fail "timed out waiting for '$text' in $file"
		sleep 0.02
	done
}

wait_for_file() {
	local file=$1 pid=$2 deadline=$((SECONDS + 60))
	until [ -s "$file" ]; do
		kill -0 "$pid" 2>/dev/null || fail "process $pid ended before writing $file"
		[ $SECONDS -lt $deadline ] || fail "timed out waiting for $file"
		sleep 0.02
	done
}

# The value of key=value in a nccl-call-bench result line.
field() {
	sed -n "s/.*\\b$2=\\([^ ]*\\).*/\\1/p" "$1" | tail -n 1
}

# Starts nccl-call-bench in the background, library loaded, waiting for $SCRATCH/$name.go,
# with the environment variables in BENCH_ENV. Sets STARTED_PID.
start_call_bench() {
	local name=$1
	shift
	env "${BENCH_ENV[@]}" "$CALL_BENCH" --ready "$SCRATCH/$name.ready" \
		--go "$SCRATCH/$name.go" "$@" >"$SCRATCH/$name.out" 2>"$SCRATCH/$name.err" &
	STARTED_PID=$!
	BACKGROUND_PIDS+=("$STARTED_PID")
	wait_for_file "$SCRATCH/$name.ready" "$STARTED_PID"
}

finish_call_bench() {
	local pid=$1 name=$2
	wait "$pid" || fail "nccl-call-bench ($name) failed: $(cat "$SCRATCH/$name.err")"
	forget_pid "$pid"
}

# Starts `tcheck-bpf record` on the given pids and waits until it traces. Sets STARTED_PID.
start_recorder() {
	local name=$1 pid_options=() pid keeper tracer=${RECORDER_BINARY:-$TCHECK}
	shift
	for pid in "$@"; do
		pid_options+=(--pid "$pid")
	done
	# record --pid ends when its targets do; an idle extra target keeps it up until
	# stop_background, so its CPU time and memory can be read after the load.
	sleep 3600 &
	keeper=$!
	BACKGROUND_PIDS+=("$keeper")
	pid_options+=(--pid "$keeper")
	"$tracer" record -o "$SCRATCH/$name.trace" "${pid_options[@]}" 2>"$SCRATCH/$name.log" &
	STARTED_PID=$!
	BACKGROUND_PIDS+=("$STARTED_PID")
	wait_for_text "$SCRATCH/$name.log" "tracing" "$STARTED_PID"
}

# SIGINT, then wait for the recorder to detach and close its trace.
stop_background() {
	kill -INT "$1" 2>/dev/null || true
	wait "$1" || fail "process $1 failed: $(cat "$2" 2>/dev/null)"
	forget_pid "$1"
}

# The final stats record of a trace: "calls drops".
trace_stats() {
	"$TCHECK" dump "$1" | grep '"kind":"stats"' | tail -n 1 |
		python3 -c 'import json, sys; s = json.load(sys.stdin); print(s["calls"], s["ringbuf_drops"])'
}

recorded_calls() {
	sed -n 's/.* \([0-9][0-9]*\) NCCL calls recorded.*/\1/p' "$1" | tail -n 1
}

# utime + stime of a process (the command name in field 2 has no spaces here).
# Other tracers on the machine (the end-to-end tests, say) disturb every figure.
check_quiet() {
	local others
	others=$(pgrep -x tcheck-bpf | tr '\n' ' ' || true)
	[ -z "$others" ] ||
		note "another tcheck-bpf (pid ${others% }) ran $1 the benchmark; its figures may be disturbed"
}

cpu_ticks() {
	[ -r "/proc/$1/stat" ] || fail "process $1 ended before its CPU time was read"
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

# ---- Call cost: the four variants of one library, taking turns round by round. ----

# Prints a variant's figure; the .out file keeps it for the report.
print_variant() {
	printf '    %-56s%s ns/call%s\n' "$1" "$(field "$SCRATCH/$2.out" ns_per_call)" "$3"
}

# untraced: nothing attached. floor: the empty entry and return probes of
# bpf/benchmark_floor.bpf.c. traced: tcheck-bpf record --pid, every NCCL
# function of the library probed. interposer: an LD_PRELOAD wrapper logging
# the same fields from inside the process. Each is a process of its own; a
# ring of FIFOs passes the turn, so a drift of the machine's speed (large on
# a shared VM) reaches all four alike.
measure_call_cost() {
	local tag=$1 library=$2 i floor recorder calls recorded logged stats members=4
	local untraced_pid floor_pid traced_pid interposer_pid baseline_pid baseline_recorder
	local untraced_copy=$SCRATCH/$tag-untraced-lib/libnccl.so.2
	local floor_copy=$SCRATCH/$tag-floor-lib/libnccl.so.2
	local traced_copy=$SCRATCH/$tag-traced-lib/libnccl.so.2
	local baseline_copy=$SCRATCH/$tag-baseline-lib/libnccl.so.2
	local interposer_log=$SCRATCH/$tag-interposer.calls
	local rounds=(--calls "$CALLS" --rounds "$ROUNDS")
	echo "  $tag: $library"
	[ -z "$BASELINE" ] || members=5
	# A uprobe belongs to a file: the floor and each tracer get a copy of their own, and so
	# do the untraced process and the interposer, which another tracer on the machine
	# (one that probes the installed library) would otherwise slow down.
	mkdir -p "$(dirname "$untraced_copy")" "$(dirname "$floor_copy")" "$(dirname "$traced_copy")" \
		"$(dirname "$baseline_copy")"
	cp "$library" "$untraced_copy"
	cp "$library" "$floor_copy"
	cp "$library" "$traced_copy"
	[ -z "$BASELINE" ] || cp "$library" "$baseline_copy"
	for ((i = 0; i < members; i++)); do
		mkfifo "$SCRATCH/$tag-turn-$i"
	done
	BENCH_ENV=()
	start_call_bench "$tag-untraced" --lib "$untraced_copy" "${rounds[@]}" \
		--turn-in "$SCRATCH/$tag-turn-0" --turn-out "$SCRATCH/$tag-turn-1"
	untraced_pid=$STARTED_PID
	start_call_bench "$tag-floor" --lib "$floor_copy" "${rounds[@]}" \
		--turn-in "$SCRATCH/$tag-turn-1" --turn-out "$SCRATCH/$tag-turn-2"
	floor_pid=$STARTED_PID
	start_call_bench "$tag-traced" --lib "$traced_copy" "${rounds[@]}" \
		--turn-in "$SCRATCH/$tag-turn-2" --turn-out "$SCRATCH/$tag-turn-3"
	traced_pid=$STARTED_PID
	BENCH_ENV=(LD_PRELOAD="$INTERPOSER" NCCL_INTERPOSER_LOG="$interposer_log"
		NCCL_INTERPOSER_QUIET=1)
	start_call_bench "$tag-interposer" --lib "$untraced_copy" "${rounds[@]}" \
		--turn-in "$SCRATCH/$tag-turn-3" --turn-out "$SCRATCH/$tag-turn-$((4 % members))"
	interposer_pid=$STARTED_PID
	BENCH_ENV=()
	if [ -n "$BASELINE" ]; then
		start_call_bench "$tag-baseline" --lib "$baseline_copy" "${rounds[@]}" \
			--turn-in "$SCRATCH/$tag-turn-4" --turn-out "$SCRATCH/$tag-turn-0"
		baseline_pid=$STARTED_PID
	fi

	"$PROBE_FLOOR" --lib "$floor_copy" --symbol ncclAllReduce --pid "$floor_pid" \
		2>"$SCRATCH/$tag-floor.log" &
	floor=$!
	BACKGROUND_PIDS+=("$floor")
	wait_for_text "$SCRATCH/$tag-floor.log" "attached" "$floor"
	start_recorder "$tag-traced" "$traced_pid"
	recorder=$STARTED_PID
	if [ -n "$BASELINE" ]; then
		RECORDER_BINARY=$BASELINE_TCHECK start_recorder "$tag-baseline" "$baseline_pid"
		baseline_recorder=$STARTED_PID
	fi

	touch "$SCRATCH/$tag-untraced.go" "$SCRATCH/$tag-floor.go" "$SCRATCH/$tag-traced.go" \
		"$SCRATCH/$tag-interposer.go" "$SCRATCH/$tag-baseline.go"
	printf t >"$SCRATCH/$tag-turn-0"
	finish_call_bench "$untraced_pid" "$tag-untraced"
	finish_call_bench "$floor_pid" "$tag-floor"
	finish_call_bench "$traced_pid" "$tag-traced"
	finish_call_bench "$interposer_pid" "$tag-interposer"
	[ -z "$BASELINE" ] || finish_call_bench "$baseline_pid" "$tag-baseline"
	stop_background "$floor" "$SCRATCH/$tag-floor.log"
	stop_background "$recorder" "$SCRATCH/$tag-traced.log"
	[ -z "$BASELINE" ] || stop_background "$baseline_recorder" "$SCRATCH/$tag-baseline.log"
	rm -f "$untraced_copy" "$floor_copy" "$traced_copy" "$baseline_copy" "$SCRATCH/$tag-baseline.trace"

	print_variant untraced "$tag-untraced" ""
	print_variant "empty uprobe pair (floor)" "$tag-floor" ""

	calls=$(field "$SCRATCH/$tag-traced.out" calls)
	recorded=$(recorded_calls "$SCRATCH/$tag-traced.log")
	stats=$(trace_stats "$SCRATCH/$tag-traced.trace")
	rm -f "$SCRATCH/$tag-traced.trace"
	print_variant "tcheck-bpf record --pid" "$tag-traced" " ($recorded calls recorded)"
	# Dropped calls take a cheaper path: the figure would flatter the tracer.
	[ "$recorded" = "$calls" ] ||
		note "$tag: $calls calls made but $recorded recorded (drops: ${stats#* }); its traced figure is too low"
	[ -z "$BASELINE" ] || print_variant "earlier build ($BASELINE)" "$tag-baseline" ""

	[ "$(field "$SCRATCH/$tag-interposer.out" function)" = "$INTERPOSER" ] ||
		fail "ncclAllReduce resolved to $(field "$SCRATCH/$tag-interposer.out" function), not to the interposer"
	calls=$(field "$SCRATCH/$tag-interposer.out" calls)
	logged=$(($(stat -c %s "$interposer_log") / INTERPOSER_RECORD_BYTES))
	rm -f "$interposer_log"
	print_variant "LD_PRELOAD interposer" "$tag-interposer" " ($logged calls logged)"
	[ "$logged" = "$calls" ] || fail "$tag: $calls calls made, the interposer logged $logged"
}

# Appends the run_cnt and run_time_ns of the BPF programs of recorder $1 to
# $SCRATCH/$2.programs ("name runs ns" lines): its program descriptors carry them.
read_program_stats() {
	local recorder=$1 name=$2 fd_info id runs
	for fd_info in /proc/"$recorder"/fdinfo/*; do
		# Links name their program too; only a program's own descriptor has run_cnt.
		runs=$(sed -n 's/^run_cnt:[[:space:]]*//p' "$fd_info" 2>/dev/null || true)
		[ -n "$runs" ] || continue
		id=$(sed -n 's/^prog_id:[[:space:]]*//p' "$fd_info")
		printf '%s %s %s\n' \
			"$(bpftool -j prog show id "$id" | python3 -c 'import json, sys; print(json.load(sys.stdin)["name"])')" \
			"$runs" "$(sed -n 's/^run_time_ns:[[:space:]]*//p' "$fd_info")" \
			>>"$SCRATCH/$name.programs"
	done
}

# Time inside tcheck-bpf's BPF programs per call, from kernel.bpf_stats_enabled:
# one run of 5 x 50000 calls traced by the binary $2, its programs' run_cnt and
# run_time_ns appended to $SCRATCH/$1.programs ("name runs ns" lines).
measure_program_run() {
	local name=$1 tracer=$2 bench recorder
	sysctl -qw kernel.bpf_stats_enabled=1
	start_call_bench "$name" --lib "$NCCL_DOUBLE" --calls 50000 --rounds 5
	bench=$STARTED_PID
	RECORDER_BINARY=$tracer start_recorder "$name" "$bench"
	recorder=$STARTED_PID
	touch "$SCRATCH/$name.go"
	finish_call_bench "$bench" "$name"
	read_program_stats "$recorder" "$name"
	sysctl -qw kernel.bpf_stats_enabled="$SAVED_BPF_STATS"
	stop_background "$recorder" "$SCRATCH/$name.log"
	rm -f "$SCRATCH/$name.trace" "$SCRATCH/$name.go" "$SCRATCH/$name.ready"
}

# The same statistics on a job's calls: a 2-rank job of the test double's workload
# (communicators made, work between the calls), where the bench's loop on a NULL
# communicator reads none of a communicator's memory and keeps every cache warm.
measure_job_program_run() {
	local name=$1 tracer=$2 job=$SCRATCH/$1-job workload recorder
	sysctl -qw kernel.bpf_stats_enabled=1
	rm -rf "$job"
	mkdir -p "$job"
	LD_LIBRARY_PATH=$ROOT/.output/tests/lib "$ROOT/.output/tests/nccl-workload" --ranks 2 \
		--steps "$JOB_STEPS" --log-dir "$job" --wait-file "$job/go" >"$job/out" 2>&1 &
	workload=$!
	BACKGROUND_PIDS+=("$workload")
	# Each rank opens its log, then waits for the go file.
	local deadline=$((SECONDS + 60))
	until [ -e "$job/rank-0.jsonl" ] && [ -e "$job/rank-1.jsonl" ]; do
		kill -0 "$workload" 2>/dev/null || fail "the workload ended early: $(tail -n 5 "$job/out")"
		[ $SECONDS -lt $deadline ] || fail "timed out waiting for the 2-rank job's ranks to start"
		sleep 0.02
	done
	RECORDER_BINARY=$tracer start_recorder "$name" "$workload"
	recorder=$STARTED_PID
	touch "$job/go"
	wait "$workload" || fail "the workload failed: $(tail -n 5 "$job/out")"
	forget_pid "$workload"
	read_program_stats "$recorder" "$name"
	sysctl -qw kernel.bpf_stats_enabled="$SAVED_BPF_STATS"
	stop_background "$recorder" "$SCRATCH/$name.log"
	rm -f "$SCRATCH/$name.trace"
}

# ns per run of each library_call_ program over the runs of $1: "name runs ns_per_run".
program_times() {
	awk '$1 ~ /^library_call_/ { runs[$1] += $2; ns[$1] += $3 }
		END { for (p in runs) if (runs[p] > 0) printf "%s %d %.0f\n", p, runs[p], ns[p] / runs[p] }' \
		"$SCRATCH/$1.programs" | sort
}

# Entry + return, ns per call.
program_time_per_call() {
	program_times "$1" | awk '{ sum += $3 } END { printf "%.0f", sum }'
}

# This build's programs and, with BASELINE, the earlier build's, taking turns (3 runs each).
measure_program_time() {
	local i
	step "  time in tcheck-bpf's BPF programs (bpf_stats)"
	SAVED_BPF_STATS=$(sysctl -n kernel.bpf_stats_enabled)
	: >"$SCRATCH/double-bpf-stats.programs"
	: >"$SCRATCH/baseline-bpf-stats.programs"
	for i in 1 2 3; do
		measure_program_run double-bpf-stats "$TCHECK"
		[ -z "$BASELINE" ] || measure_program_run baseline-bpf-stats "$BASELINE_TCHECK"
	done
	: >"$SCRATCH/job-bpf-stats.programs"
	: >"$SCRATCH/baseline-job-bpf-stats.programs"
	for i in 1 2; do
		measure_job_program_run job-bpf-stats "$TCHECK"
		[ -z "$BASELINE" ] || measure_job_program_run baseline-job-bpf-stats "$BASELINE_TCHECK"
	done
	SAVED_BPF_STATS=
	grep -q '^library_call_' "$SCRATCH/double-bpf-stats.programs" ||
		note "the recorder's BPF program statistics could not be read"
	grep -q '^library_call_' "$SCRATCH/job-bpf-stats.programs" ||
		note "the recorder's BPF program statistics on the 2-rank job could not be read"
	program_times double-bpf-stats | awk '{ printf "%s %s ns  ", $1, $3 }'
	printf 'together %s ns' "$(program_time_per_call double-bpf-stats)"
	[ -z "$BASELINE" ] || printf '; earlier build %s ns' "$(program_time_per_call baseline-bpf-stats)"
	echo
	step "  the same on a 2-rank job's calls"
	program_times job-bpf-stats | awk '{ printf "%s %s ns  ", $1, $3 }'
	printf 'together %s ns' "$(program_time_per_call job-bpf-stats)"
	[ -z "$BASELINE" ] || printf '; earlier build %s ns' "$(program_time_per_call baseline-job-bpf-stats)"
	echo
}

# ---- Event rate: LOAD_PROCESSES processes of LOAD_THREADS threads at a rate (0: full speed). ----

# measure_load RATE [baseline]: with 'baseline', under the earlier build, into load-baseline.rows.
measure_load() {
	local rate=$1 build=${2:-} name=load-$1 pids=() pid recorder i per_process_rate=0
	local ticks_before ticks_after calls=0 seconds recorded stats rss rows=$SCRATCH/load.rows
	if [ -n "$build" ]; then
		name=load-$build-$rate
		rows=$SCRATCH/load-$build.rows
	fi
	if [ "$rate" = 0 ]; then
		step "$LOAD_PROCESSES x $LOAD_THREADS threads at full speed${build:+ ($build)}"
	else
		step "$LOAD_PROCESSES x $LOAD_THREADS threads, $rate calls/s in all${build:+ ($build)}"
		per_process_rate=$((rate / LOAD_PROCESSES))
	fi
	for ((i = 0; i < LOAD_PROCESSES; i++)); do
		"$CALL_BENCH" --lib "$NCCL_DOUBLE" --seconds "$LOAD_SECONDS" --calls 1000 \
			--threads "$LOAD_THREADS" --rate "$per_process_rate" --ready "$SCRATCH/$name-$i.ready" \
			--go "$SCRATCH/$name.go" >"$SCRATCH/$name-$i.out" 2>"$SCRATCH/$name-$i.err" &
		pids+=($!)
		BACKGROUND_PIDS+=($!)
		wait_for_file "$SCRATCH/$name-$i.ready" "$!"
	done
	if [ -n "$build" ]; then
		RECORDER_BINARY=$BASELINE_TCHECK start_recorder "$name" "${pids[@]}"
	else
		start_recorder "$name" "${pids[@]}"
	fi
	recorder=$STARTED_PID
	ticks_before=$(cpu_ticks "$recorder")
	touch "$SCRATCH/$name.go"
	for ((i = 0; i < LOAD_PROCESSES; i++)); do
		finish_call_bench "${pids[$i]}" "$name-$i"
		calls=$((calls + $(field "$SCRATCH/$name-$i.out" calls)))
	done
	# What the recorder still holds is part of the load: let it drain.
	sleep 0.3
	ticks_after=$(cpu_ticks "$recorder")
	rss=$(awk '/^VmHWM:/ { print $2 }' "/proc/$recorder/status")
	stop_background "$recorder" "$SCRATCH/$name.log"
	recorded=$(recorded_calls "$SCRATCH/$name.log")
	stats=$(trace_stats "$SCRATCH/$name.trace")
	rm -f "$SCRATCH/$name.trace"
	seconds=$(for ((i = 0; i < LOAD_PROCESSES; i++)); do field "$SCRATCH/$name-$i.out" seconds; done |
		sort -g | tail -n 1)
	# CPU per second of load, and per call recorded (what one core would sustain).
	awk -v rate="$rate" -v calls="$calls" -v seconds="$seconds" -v recorded="$recorded" \
		-v drops="${stats#* }" -v ticks=$((ticks_after - ticks_before)) -v hz="$CLOCK_TICKS" \
		-v rss="$rss" 'BEGIN {
		printf "%s %.0f %d %d %d %.1f %.1f %.2f\n", rate, calls / seconds, calls, recorded,
			drops, 100 * ticks / hz / seconds, rss / 1024,
			recorded ? 1e6 * ticks / hz / recorded : 0
	}' >>"$rows"
	tail -n 1 "$rows" |
		awk '{ printf "%s calls/s offered, %s drops, recorder %s%% CPU\n", $2, $5, $6 }'
	[ -n "$build" ] || LAST_DROPS=${stats#* }
}

# This build at RATE, then with BASELINE the earlier build at the same rate: turns, alike loads.
measure_load_builds() {
	measure_load "$1"
	local drops=$LAST_DROPS
	[ -z "$BASELINE" ] || measure_load "$1" baseline
	LAST_DROPS=$drops
}

# ---- The report ----

ns() {
	field "$SCRATCH/$1.out" ns_per_call
}

# The calling thread's own CPU time per call: what the probes cost it, without the
# time it waited for a CPU, which on a loaded machine swells the wall-time figures.
cpu_ns() {
	field "$SCRATCH/$1.out" cpu_ns_per_call
}

cost_rows() {
	local tag=$1 label=$2 variant values=() commit
	commit=$(git -C "$BASELINE" rev-parse --short HEAD 2>/dev/null || echo "$BASELINE")
	for variant in untraced floor traced interposer baseline; do
		if [ -e "$SCRATCH/$tag-$variant.out" ]; then
			values+=("$(ns "$tag-$variant")" "$(cpu_ns "$tag-$variant")")
		else
			values+=(- -)
		fi
	done
	# Wall ns, its added and ratio, then the same in the thread's CPU time.
	printf '%s\n' "untraced" "empty uprobe + uretprobe (floor)" "tcheck-bpf record --pid" \
		"LD_PRELOAD interposer" "earlier build ($commit): tcheck-bpf record --pid" |
		awk -v label="$label" -v values="${values[*]}" 'BEGIN { split(values, v, " ") }
		{
			wall = v[2 * NR - 1]; cpu = v[2 * NR]
			if (wall == "-")
				next
			if (NR == 1) {
				printf "| %s | %s | %.1f | - | - | %.1f | - | - |\n", label, $0, wall, cpu
				next
			}
			printf "| %s | %s | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f |\n", label, $0, wall,
				wall - v[1], (wall - v[1]) / (v[3] - v[1]), cpu, cpu - v[2],
				(cpu - v[2]) / (v[4] - v[2])
		}'
}

write_section() {
	local cpu_model commit
	cpu_model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo | head -n 1)
	commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
	git -C "$ROOT" diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
	echo "$BEGIN_MARKER"
	echo "## NCCL probe cost"
	echo
	echo "Command: \`make bench\` (tools/bench/run-bench.sh), $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit."
	echo "Machine: kernel $(uname -r), $(nproc) CPUs, $cpu_model."
	echo
	echo "### Added cost per NCCL call"
	echo
	echo "\`nccl-call-bench\` calls \`ncclAllReduce(send, recv, 1, ncclFloat32, ncclSum, NULL, NULL)\`"
	echo "(it returns ncclInvalidArgument at once) $CALLS times per round, $ROUNDS rounds; the figure"
	echo "is the median round. The four variants are four processes that take turns round by round"
	echo "(the floor and the tracer probe copies of the library of their own), so that the machine's"
	echo "drifts reach them alike. Added = variant - untraced; the last column divides it by the"
	echo "floor's: for tcheck-bpf that is (c - a) / (b - a), whose target is at most 1.15."
	[ -z "$BASELINE" ] || echo "A fifth process, traced by the earlier build named in its row, takes the same turns."
	echo "Load average at the start and the end: $LOAD_BEFORE; $(cut -d' ' -f1-3 /proc/loadavg)."
	echo
	echo "The last three columns are the same figures in the calling thread's own CPU time (user and"
	echo "kernel, where the probes run): the time a thread waits for a CPU on a loaded machine swells"
	echo "the wall times, and more for a variant whose tracer competes for the CPUs."
	echo
	echo "| Library | Variant | ns/call | added ns/call | added / floor's added | CPU ns/call | CPU added | CPU added / floor's |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|"
	cost_rows double "test double (tests/nccl_double)"
	[ ! -e "$SCRATCH/real-untraced.out" ] ||
		cost_rows real "NCCL $(field "$SCRATCH/real-untraced.out" version) ($REAL_NCCL)"
	echo
	awk -v a="$(ns double-untraced)" -v b="$(ns double-floor)" -v c="$(ns double-traced)" \
		-v d="$(ns double-interposer)" -v bpf="$(program_time_per_call double-bpf-stats)" \
		-v ca="$(cpu_ns double-untraced)" -v cb="$(cpu_ns double-floor)" -v cc="$(cpu_ns double-traced)" 'BEGIN {
		printf "Test double: tcheck-bpf over the floor (c - a) / (b - a) = **%.2f** (target <= 1.15; " \
			"in the thread'"'"'s CPU time **%.2f**), ", (c - a) / (b - a), (cc - ca) / (cb - ca)
		printf "the floor (b - a) being %.1f ns; BPF programs **%d ns** per call, entry and return " \
			"(bpf_stats, below; target <= 300); the interposer adds (d - a) = %.1f ns per call.\n", b - a, bpf, d - a
	}'
	if [ -e "$SCRATCH/real-untraced.out" ]; then
		echo
		awk -v a="$(ns real-untraced)" -v b="$(ns real-floor)" -v c="$(ns real-traced)" \
			-v ca="$(cpu_ns real-untraced)" -v cb="$(cpu_ns real-floor)" -v cc="$(cpu_ns real-traced)" 'BEGIN {
			printf "Real NCCL: (c - a) / (b - a) = **%.2f** (in CPU time %.2f).\n", (c - a) / (b - a),
				(cc - ca) / (cb - ca)
		}'
	fi
	echo
	echo "Time inside tcheck-bpf's own BPF programs (kernel.bpf_stats_enabled, a separate run on the"
	echo "test double; the stats add a little of their own):"
	echo
	echo "| Build | Program | runs | ns/run |"
	echo "|---|---|---:|---:|"
	program_times double-bpf-stats | awk '{ printf "| this | %s | %d | %d |\n", $1, $2, $3 }'
	[ -z "$BASELINE" ] ||
		program_times baseline-bpf-stats | awk -v commit="$(git -C "$BASELINE" rev-parse --short HEAD 2>/dev/null)" \
			'{ printf "| earlier (%s) | %s | %d | %d |\n", commit, $1, $2, $3 }'
	echo
	echo "Three runs of 5 x 50000 calls per build$([ -z "$BASELINE" ] || echo ", the builds taking turns"); entry + return: this build $(program_time_per_call double-bpf-stats) ns$([ -z "$BASELINE" ] || echo ", the earlier $(program_time_per_call baseline-bpf-stats) ns")."
	echo
	echo "The same programs on a job's calls: \`nccl-workload --ranks 2 --steps $JOB_STEPS\` on the test double,"
	echo "\`record --pid\` attached before its communicators are made, two runs per build. Its calls name"
	echo "communicators and the ranks work between them, so the programs find their data out of the caches,"
	echo "as in a training job; the loop above names none."
	echo
	echo "| Build | Program | runs | ns/run |"
	echo "|---|---|---:|---:|"
	program_times job-bpf-stats | awk '{ printf "| this | %s | %d | %d |\n", $1, $2, $3 }'
	[ -z "$BASELINE" ] ||
		program_times baseline-job-bpf-stats | awk -v commit="$(git -C "$BASELINE" rev-parse --short HEAD 2>/dev/null)" \
			'{ printf "| earlier (%s) | %s | %d | %d |\n", commit, $1, $2, $3 }'
	echo
	echo "### Event rate without drops, and the recorder's cost"
	echo
	echo "$LOAD_PROCESSES \`nccl-call-bench\` processes of $LOAD_THREADS threads on the test double, ${LOAD_SECONDS} s each run, under"
	echo "\`tcheck-bpf record --pid\` with the default ring buffer (no --ring-buffer-mb). Offered = calls made per"
	echo "second of the run; drops = ringbuf_drops of the trace's final stats record; recorder CPU ="
	echo "its utime + stime from the start of the load to 0.3 s after its end (the drain), over the"
	echo "load's length (100% = one CPU), and per call recorded; RSS = its peak (VmHWM)."
	echo
	echo "| Target calls/s | offered calls/s | calls made | calls recorded | drops | recorder CPU | recorder CPU per call | recorder max RSS |"
	echo "|---|---:|---:|---:|---:|---:|---:|---:|"
	awk '{ printf "| %s | %d | %d | %d | %d | %.1f%% | %.2f us | %.1f MiB |\n",
		$1 == 0 ? "full speed" : $1, $2, $3, $4, $5, $6, $8, $7 }' "$SCRATCH/load.rows"
	echo
	if [ -s "$SCRATCH/load-baseline.rows" ]; then
		echo "The earlier build ($(git -C "$BASELINE" rev-parse --short HEAD 2>/dev/null || echo "$BASELINE")), each run right after this build's at the same rate:"
		echo
		echo "| Target calls/s | offered calls/s | calls made | calls recorded | drops | recorder CPU | recorder CPU per call | recorder max RSS |"
		echo "|---|---:|---:|---:|---:|---:|---:|---:|"
		awk '{ printf "| %s | %d | %d | %d | %d | %.1f%% | %.2f us | %.1f MiB |\n",
			$1 == 0 ? "full speed" : $1, $2, $3, $4, $5, $6, $8, $7 }' "$SCRATCH/load-baseline.rows"
		echo
	fi
	awk -v cpus="$(nproc)" '$5 == 0 { if ($2 > best) best = $2 }
		NR == 1 { full_speed_drops = $5 } END {
		if (!best)
			print "Every rate tried had drops."
		else if (full_speed_drops == 0)
			printf "Highest offered rate with no drops: **%d calls/s**, the most these %d CPUs " \
				"offer: the probes'"'"' own cost in the calling processes bounds the rate before " \
				"the recorder does.\n", best, cpus
		else
			printf "Highest offered rate with no drops: **%d calls/s**.\n", best
	}' "$SCRATCH/load.rows"
	if [ -s "$SCRATCH/notes" ]; then
		echo
		sed 's/^/Note: /' "$SCRATCH/notes"
	fi
	echo "$END_MARKER"
}

# The run's row of the history table: its floor beside its ratio and BPF time.
history_row() {
	local commit real_ratio=-
	commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
	[ ! -e "$SCRATCH/real-untraced.out" ] ||
		real_ratio=$(awk -v a="$(ns real-untraced)" -v b="$(ns real-floor)" -v c="$(ns real-traced)" \
			'BEGIN { printf "%.2f", (c - a) / (b - a) }')
	awk -v a="$(ns double-untraced)" -v b="$(ns double-floor)" -v c="$(ns double-traced)" \
		-v ca="$(cpu_ns double-untraced)" -v cb="$(cpu_ns double-floor)" -v cc="$(cpu_ns double-traced)" \
		-v bpf="$(program_time_per_call double-bpf-stats)" -v real="$real_ratio" \
		-v when="$(date -u '+%Y-%m-%d %H:%M')" -v commit="$commit" -v kernel="$(uname -r)" \
		-v load="$LOAD_BEFORE" 'BEGIN {
		printf "| %s | %s | %s | %s | %.0f | %.0f | %.2f (CPU %.2f) | %d | %s |\n", when, commit, kernel,
			load, b - a, c - a, (c - a) / (b - a), (cc - ca) / (cb - ca), bpf, real
	}'
}

update_results() {
	local section=$SCRATCH/section.md
	write_section >"$section"
	history_row >"$SCRATCH/history-row.md"
	if [ ! -e "$RESULTS" ]; then
		printf "# Benchmarks\n\nBenchmarks of tcheck-bpf; every figure comes from \`make bench\` %s\n\n" \
			"on the machine named with it." >"$RESULTS"
	fi
	python3 - "$RESULTS" "$section" "$BEGIN_MARKER" "$END_MARKER" "$HISTORY_MARKER" \
		"$SCRATCH/history-row.md" <<'EOF'
import os
import sys
path, section_path, begin, end, history, row_path = sys.argv[1:]
text = open(path).read()
section = open(section_path).read()
row = open(row_path).read().rstrip("\n")
if begin in text and end in text:
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    text = head + section.rstrip("\n") + tail
else:
    text = text.rstrip("\n") + "\n\n" + section
if history not in text:
    table = ("\n\n### The floor of each run\n\n"
             "Every `make bench` adds a row (the test double; added ns per call over the untraced "
             "process; BPF = entry + return per call, bpf_stats; load = the load average at its start).\n\n"
             "| Date (UTC) | commit | kernel | load | floor added ns | tcheck-bpf added ns | ratio | BPF ns/call | real NCCL ratio |\n"
             "|---|---|---|---|---:|---:|---:|---:|---:|\n" + history)
    text = text.replace(end, end + table, 1)
# Rows go just above the marker: the newest last.
text = text.replace(history, row + "\n" + history, 1)
# Written aside and renamed into place: an interrupted run leaves the file whole.
with open(path + ".tmp", "w") as out:
    out.write(text)
os.replace(path + ".tmp", path)
EOF
}

# ---- Main ----

[ "$(id -u)" -eq 0 ] || fail "the benchmarks load BPF programs: run them as root"
for program in "$TCHECK" "$CALL_BENCH" "$PROBE_FLOOR" "$INTERPOSER" "$NCCL_DOUBLE"; do
	[ -e "$program" ] || fail "$program is missing: run make all"
done
started_at=$SECONDS
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
[ -z "$BASELINE" ] || [ -x "$BASELINE_TCHECK" ] || fail "BASELINE: $BASELINE_TCHECK is missing: build it first"
check_quiet "before"
echo "bench: call cost ($ROUNDS rounds of $CALLS calls)"
measure_call_cost double "$NCCL_DOUBLE"
measure_program_time
if [ -r "$REAL_NCCL" ]; then
	measure_call_cost real "$REAL_NCCL"
else
	echo "  no real NCCL at $REAL_NCCL: skipped"
fi
echo "bench: event rate ($LOAD_SECONDS s per run)"
: >"$SCRATCH/load.rows"
measure_load_builds 0
if [ "$LAST_DROPS" != 0 ]; then
	for rate in "${LOAD_RATES[@]}"; do
		measure_load_builds "$rate"
		[ "$LAST_DROPS" != 0 ] || break
	done
fi
for rate in "${PACED_RATES[@]}"; do
	measure_load_builds "$rate"
done
check_quiet "at the end of"
update_results
echo
sed -n "/$BEGIN_MARKER/,/$END_MARKER/p" "$RESULTS" | sed '1d;$d'
echo
echo "bench: done in $((SECONDS - started_at)) s; results in $RESULTS"
