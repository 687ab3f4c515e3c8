#!/bin/bash
# Sourced by the benchmark scripts: the machine's uprobe floor, and the kernel's
# runs of a recorder's BPF programs.

# uprobe_floor ROOT SCRATCH: the run's uprobe floor, ns a call: ncclAllReduce of
# the NCCL test double with an empty uprobe and uretprobe pair (probe-floor)
# against the same calls untraced; "-" when the bench programs are not built.
uprobe_floor() {
	local root=$1 scratch=$2
	local bench="$root/.output/tests/bench/nccl-call-bench" floor="$root/.output/tests/bench/probe-floor"
	local library="$root/.output/tests/lib/libnccl.so.2" pid prober plain probed
	[ -x "$bench" ] && [ -x "$floor" ] && [ -f "$library" ] || { echo "-"; return; }
	"$bench" --lib "$library" --calls 20000 --rounds 5 >"$scratch/plain.out"
	# A uprobe belongs to a file: the probed run gets a copy of its own.
	cp "$library" "$scratch/libnccl.so.2"
	rm -f "$scratch/floor.ready" "$scratch/floor.go"
	"$bench" --lib "$scratch/libnccl.so.2" --calls 20000 --rounds 5 --ready "$scratch/floor.ready" \
		--go "$scratch/floor.go" >"$scratch/probed.out" &
	pid=$!
	until [ -s "$scratch/floor.ready" ]; do sleep 0.02; done
	"$floor" --lib "$scratch/libnccl.so.2" --pid "$pid" 2>"$scratch/floor.log" &
	prober=$!
	until grep -q attached "$scratch/floor.log"; do sleep 0.02; done
	touch "$scratch/floor.go"
	wait "$pid"
	kill -TERM "$prober"
	wait "$prober" || true
	plain=$(sed -n 's/.*\bns_per_call=\([^ ]*\).*/\1/p' "$scratch/plain.out")
	probed=$(sed -n 's/.*\bns_per_call=\([^ ]*\).*/\1/p' "$scratch/probed.out")
	awk -v a="$probed" -v b="$plain" 'BEGIN { printf "%.0f\n", a - b }'
}

# bpf_program_runs PID: the runs of the BPF programs process PID holds open,
# summed (run_cnt; counted only while kernel.bpf_stats_enabled is 1).
bpf_program_runs() {
	awk '/^run_cnt:/ { sum += $2 } END { print sum + 0 }' /proc/"$1"/fdinfo/* 2>/dev/null || true
}

# recorder_runs_per_step STEP_OF FIRST LAST COMMAND...: runs COMMAND (a
# recorder over a training job) with kernel.bpf_stats_enabled on and, while it
# lives, samples the runs of its BPF programs (bpf_program_runs) at the first
# step the command STEP_OF reports (the job's last finished step, or nothing
# yet) at FIRST or later, and at the last one under LAST; prints the runs a
# step between the two, or "-".
recorder_runs_per_step() {
	local step_of=$1 first=$2 last=$3 saved recorder step runs
	local runs1='' step1='' runs2='' step2=''
	shift 3
	saved=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -qw kernel.bpf_stats_enabled=1
	"$@" >/dev/null 2>&1 &
	recorder=$!
	while kill -0 "$recorder" 2>/dev/null; do
		step=$($step_of)
		runs=$(bpf_program_runs "$recorder")
		if [ -n "$step" ] && [ -z "$step1" ] && [ "$step" -ge "$first" ]; then
			runs1=$runs step1=$step
		elif [ -n "$step" ] && [ -n "$step1" ] && [ "$step" -lt "$last" ]; then
			runs2=$runs step2=$step
		fi
		sleep 0.05
	done
	wait "$recorder" || true
	sysctl -qw kernel.bpf_stats_enabled="$saved"
	if [ -n "$step2" ] && [ "$step2" -gt "$step1" ]; then
		awk -v r="$((runs2 - runs1))" -v s="$((step2 - step1))" 'BEGIN { printf "%.1f\n", r / s }'
	else
		echo "-"
	fi
}
