#!/bin/bash
# The node agent's own cost: `tcheck-bpf agent` follows an 8-rank job of the
# NCCL test double's workload (about 5,000 NCCL calls a second) and this
# prints, as a Markdown section, the agent's CPU time as a share of one core,
# its user-space time per call, its resident memory and the series it serves.
# Root. Knobs (environment): AGENT_BENCH_SECONDS (the measured window, default
# 20), AGENT_BENCH_ROUNDS (default 3; the table gives each figure's median),
# AGENT_BENCH_RANKS (default 8), AGENT_BENCH_STEP_MS (the workload's
# --step-sleep-ms, default 20), TCHECK (another build), BASELINE (the root of
# another build, main's say, holding its tcheck-bpf: its agent takes turns
# with this one, round by round), AGENT_BENCH_PORT (default: a free one in
# 19000-19999), PERF_OUT (a file: `perf record -g` of this build's agent over
# the last round's window is written there, for `perf report -i`).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tcheck=${TCHECK:-$root/tcheck-bpf}
workload=$root/.output/tests/nccl-workload
seconds=${AGENT_BENCH_SECONDS:-20}
rounds=${AGENT_BENCH_ROUNDS:-3}
baseline=${BASELINE:-}
ranks=${AGENT_BENCH_RANKS:-8}
step_ms=${AGENT_BENCH_STEP_MS:-20}
perf_out=${PERF_OUT:-}
ticks=$(getconf CLK_TCK)
# shellcheck source=tools/bench/processes.sh
source "$root/tools/bench/processes.sh"
scratch=$(mktemp -d /tmp/tcheck-agentbench.XXXXXX)
pids=()
cleanup() {
	stop_processes "${pids[@]}"
	rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
	echo "agent-cost: FAILED: $*" >&2
	exit 1
}
command -v curl >/dev/null || fail "curl is not installed"
[ -x "$workload" ] || fail "$workload is not built (make)"
port=${AGENT_BENCH_PORT:-$(python3 -c '
import random, socket
for port in random.sample(range(19000, 20000), 1000):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(port)
    break')}
metrics_url="http://127.0.0.1:$port/metrics"

# utime and stime of a process, in clock ticks.
cpu_ticks() {
	awk '{ print $14, $15 }' "/proc/$1/stat"
}
# NCCL calls the agent counted so far (every rank, every function).
counted_calls() {
	curl -sf "$metrics_url" | awk '/^tcheck_nccl_calls_total\{/ { sum += $NF } END { printf "%d\n", sum }'
}

# One round: the agent of build $1 (tcheck-bpf binary $2) follows a fresh job
# for the window; appends "build calls/s cpu% user_us system_us rss_kb hwm_kb
# series per_rank" to $scratch/rounds. $3: a perf output file, or empty.
measure_round() {
	local name=$1 binary=$2 perf_file=$3 job="$scratch/job-$1" agent workload_pid last_step
	local user_before system_before user_after system_after calls_before calls_after
	local started ended rss_kb hwm_kb series per_rank busiest
	rm -rf "$job"
	mkdir -p "$job"
	: >"$scratch/events.jsonl"
	"$binary" agent --listen "127.0.0.1:$port" --events "$scratch/events.jsonl" \
		--select "$job" --duration $((seconds + 120)) >"$scratch/agent.log" 2>&1 &
	agent=$!
	pids+=("$agent")
	for _ in $(seq 100); do
		curl -sf "$metrics_url" >/dev/null && break
		sleep 0.1
	done
	curl -sf "$metrics_url" >/dev/null || fail "the agent serves no metrics: $(cat "$scratch/agent.log")"
	# Enough steps to outlast the window; the stop file ends the job after it.
	LD_LIBRARY_PATH="$root/.output/tests/lib" "$workload" --ranks "$ranks" --steps 1000000 \
		--step-sleep-ms "$step_ms" --log-dir "$job" --wait-file "$job/go" \
		--stop-file "$job/stop" >"$job/out" 2>&1 &
	workload_pid=$!
	pids+=("$workload_pid")
	# The launcher and its ranks.
	for _ in $(seq 300); do
		[ "$(grep -c '"event":"attached"' "$scratch/events.jsonl")" -ge $((ranks + 1)) ] && break
		sleep 0.1
	done
	[ "$(grep -c '"event":"attached"' "$scratch/events.jsonl")" -ge $((ranks + 1)) ] ||
		fail "the agent did not attach to the job's $((ranks + 1)) processes: $(cat "$scratch/agent.log")"
	touch "$job/go"
	# Past the start (communicator set-up, the first steps' learning).
	sleep 5
	read -r user_before system_before < <(cpu_ticks "$agent")
	calls_before=$(counted_calls)
	started=$(date +%s.%N)
	if [ -n "$perf_file" ]; then
		perf record -q -g -o "$perf_file" -p "$agent" -- sleep "$seconds" 2>"$scratch/perf.log" ||
			fail "perf record failed: $(cat "$scratch/perf.log")"
	else
		sleep "$seconds"
	fi
	read -r user_after system_after < <(cpu_ticks "$agent")
	ended=$(date +%s.%N)
	calls_after=$(counted_calls)
	curl -sf "$metrics_url" >"$scratch/metrics.prom"
	rss_kb=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent/status")
	hwm_kb=$(awk '/^VmHWM/ { print $2 }' "/proc/$agent/status")
	# A step ahead of every rank, so all stop after the same one.
	last_step=$(cat "$job"/rank-*.progress 2>/dev/null | sort -n | tail -n 1)
	echo $((${last_step:-0} + 3)) >"$job/stop.tmp" && mv "$job/stop.tmp" "$job/stop"
	wait "$workload_pid" || fail "the workload failed: $(tail -n 5 "$job/out")"
	kill -INT "$agent"
	wait "$agent" || fail "the agent failed: $(tail -n 5 "$scratch/agent.log")"
	pids=()
	series=$(grep -vc '^#' "$scratch/metrics.prom")
	per_rank=$(grep -v '^#' "$scratch/metrics.prom" | grep -o '\bpid="[0-9]*"' | sort |
		uniq -c | sort -n | tail -n 1 | awk '{ print $1 }')
	# The busiest rank's sample lines by metric (histogram lines under its name).
	busiest=$(grep -v '^#' "$scratch/metrics.prom" | grep -o '\bpid="[0-9]*"' | sort |
		uniq -c | sort -n | tail -n 1 | awk '{ print $2 }')
	grep -F "$busiest" "$scratch/metrics.prom" | sed 's/[{ ].*//; s/_\(bucket\|sum\|count\)$//' |
		sort | uniq -c | awk '{ printf "%s%s %s", sep, $2, $1; sep = ", " } END { print "" }' \
		>"$scratch/per-rank-$name"
	python3 - "$name" "$user_before" "$system_before" "$user_after" "$system_after" "$ticks" \
		"$started" "$ended" "$calls_before" "$calls_after" "$rss_kb" "$hwm_kb" "$series" \
		"${per_rank:-0}" >>"$scratch/rounds" <<'PY'
import sys
name, ub, sb, ua, sa, ticks, t0, t1, c0, c1, rss, hwm, series, per_rank = sys.argv[1:]
wall = float(t1) - float(t0)
user = (int(ua) - int(ub)) / int(ticks)
system = (int(sa) - int(sb)) / int(ticks)
calls = max(int(c1) - int(c0), 1)
print(name, f"{calls / wall:.0f}", f"{100 * (user + system) / wall:.2f}",
      f"{1e6 * user / calls:.2f}", f"{1e6 * system / calls:.2f}", rss, hwm, series, per_rank)
PY
	echo "agent-cost: $(tail -n 1 "$scratch/rounds")" >&2
}

builds=("this|$tcheck")
[ -n "$baseline" ] && builds+=("baseline|$baseline/tcheck-bpf")
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$rounds"); do
	for build in "${builds[@]}"; do
		perf_file=
		[ "$round" = "$rounds" ] && [ "${build%%|*}" = this ] && perf_file=$perf_out
		measure_round "${build%%|*}" "${build#*|}" "$perf_file"
	done
done

# The commit a build names in its --version.
build_commit() {
	"$1" --version | sed -n 's/.*commit \([0-9a-f]\{7\}\).*/\1/p'
}
baseline_commit=
[ -n "$baseline" ] && baseline_commit=$(build_commit "$baseline/tcheck-bpf")
python3 - "$scratch/rounds" "$rounds" "$seconds" "$ranks" "$step_ms" \
	"$(git -C "$root" rev-parse --short HEAD)" "$baseline_commit" "$(uname -r)" "$(nproc)" \
	"$load_start" "$(cut -d' ' -f1-3 /proc/loadavg)" "$scratch/per-rank-this" <<'PY'
import datetime, statistics, sys
(path, rounds, seconds, ranks, step_ms, commit, baseline, kernel, cpus, load0, load1,
 per_rank) = sys.argv[1:]
rows = {}
for line in open(path):
    name, *figures = line.split()
    rows.setdefault(name, []).append([float(f) for f in figures])
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
print("## The agent's own cost\n")
print(f"Command: `make bench` (tools/bench/agent-cost.sh), {now}, commit {commit}.")
print(f"Machine: kernel {kernel}, {cpus} CPUs; load average {load0} at the start, {load1} at the")
print("end (other work shares the CPUs: the figures are noisy).\n")
print(f"`tcheck-bpf agent --select` follows one {ranks}-rank job of the NCCL test double's workload")
print(f"(`nccl-workload --ranks {ranks} --step-sleep-ms {step_ms}`) for {seconds} s after its first")
print("five seconds; a fresh job and agent each round. CPU time from /proc/PID/stat, calls from the")
print("agent's own `tcheck_nccl_calls_total`, memory from /proc/PID/status at the end, series: the")
print(f"sample lines of one scrape of /metrics. Median of {rounds} rounds" +
      (", the builds taking turns." if baseline else "."))
print("Target: at most 2% of one core at about 5,000 calls/s.\n")
print("| build | NCCL calls/s | agent CPU (% of one core) | user us/call | system us/call "
      "| VmRSS / VmHWM MB | series | series of one rank |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for name, label in (("this", f"this ({commit})"), ("baseline", f"earlier build ({baseline})")):
    if name not in rows:
        continue
    m = [statistics.median(column) for column in zip(*rows[name])]
    print(f"| {label} | {m[0]:,.0f} | {m[1]:.2f}% | {m[2]:.2f} | {m[3]:.2f} "
          f"| {m[4] / 1024:.1f} / {m[5] / 1024:.1f} | {m[6]:.0f} | {m[7]:.0f} |")
print()
print("Each round's CPU share: " + "; ".join(
    f"{name} " + ", ".join(f"{r[1]:.2f}%" for r in rows[name]) for name in rows) + ".")
print()
print(f"The busiest rank's series by metric (this build, last round): {open(per_rank).read().strip()}.")
PY
