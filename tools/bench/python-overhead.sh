#!/bin/bash
# Training-step time of the CPU training workload, untraced and traced with
# --python (default selection: the reference recording), with --rules (the
# deploy mode: the rules of a --python run checked live; only the probes they
# need), with --rules of 'infer --torch-level' (torch's probes only, no
# frame evaluator), and with everything selectable plus torch operators,
# and under bcc's Python USDT tool (pythoncalls -L) when bcc can compile here;
# for a benchmark-sized MLP and for the tests' tiny one. Runs are interleaved
# round by round and each traced run is divided by the untraced run of its own
# round, so the machine's drift (other users of its cores) reaches all alike;
# the figures are medians over rounds. Both torch stacks: Debian 12's torch
# 1.13 / Python 3.11, and torch 2.6 / Python 3.13 in the trixie root that
# tools/stacks/torch-root.sh trixie builds (left out when it is not built). Prints a
# Markdown section. BASELINE=path adds the deploy row of a second build (an
# earlier commit), run in the same rounds with the same rules. After the
# rounds, one more run of each traced variant counts the kernel's probe runs
# a step (bpf_stats run_cnt of the recorder's programs over the steady
# steps), and the run's uprobe floor (an empty entry and return probe pair on
# the NCCL test double's ncclAllReduce, tools/bench/probe-floor) is measured
# before and after the rounds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tools/bench/probe-counts.sh
source "$root/tools/bench/probe-counts.sh"
tcheck="$root/tcheck-bpf"
baseline=${BASELINE:-}
workload="$root/tests/workloads/python/train_cpu.py"
rounds=${PYTHON_BENCH_ROUNDS:-5}
scratch=$(mktemp -d /tmp/tcheck-pybench.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
ops=(--torch-op add_ --torch-op mul_ --torch-op zero_)
# name|steps|workload options
models=(
	"benchmark MLP 256-512-512-4, batch 64|60|--input-features 256 --hidden-features 512 --batch-size 64"
	"tiny MLP 16-32-32-4, batch 8 (the tests' model)|300|"
)
first_steady_step=10
# One torch thread: on cores shared with other work, a second thread waiting at
# every parallel region turns any neighbour's time slice into step time.
cpus=$(nproc) # before OMP_NUM_THREADS, which nproc obeys
export OMP_NUM_THREADS=1

/usr/bin/python3 -c 'import torch' 2>/dev/null || {
	echo "(skipped: Debian's python3-torch is not installed)"
	exit 0
}
# name|label|the command that runs Python
stacks=("torch-1.13|Debian 12's python3.11 and torch 1.13|/usr/bin/python3")
torch2_root=${TCHECK_TORCH2_ROOT:-/var/cache/tcheck-bpf/trixie-torch}
if [ -f "$torch2_root/.tcheck-ready" ]; then
	stacks+=("torch-2.6|Debian trixie's python3.13 and torch 2.6, chrooted|$root/tools/stacks/in-root.sh $torch2_root --share $root --share /tmp -- /usr/bin/python3")
fi

# bcc compiles its BPF programs against kernel headers. This kernel ships none;
# its USDT programs only need pt_regs, so Debian's linux-headers (any version)
# serve when the common and the arch tree are joined into one.
bcc_kernel_source() {
	local common arch
	[ -x /usr/sbin/ucalls ] || return 1
	if [ -e "/lib/modules/$(uname -r)/build/include/linux/kconfig.h" ]; then
		echo "/lib/modules/$(uname -r)/build"
		return 0
	fi
	arch=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1)
	[ -n "$arch" ] || return 1
	common="${arch%-amd64}-common"
	[ -d "$common" ] || return 1
	cp -as "$common" "$scratch/kernel-headers"
	cp -asf "$arch/." "$scratch/kernel-headers/"
	echo "$scratch/kernel-headers"
}
bcc_headers=$(bcc_kernel_source || true)
modes=(untraced default deploy torchlevel everything)
[ -n "$baseline" ] && modes+=(baseline)
[ -n "$bcc_headers" ] && modes+=(bcc)
# modes_of STACK: bcc's USDT probes exist only in Debian 12's python3.11.
modes_of() {
	local mode
	for mode in "${modes[@]}"; do
		[ "$mode" = bcc ] && [ "$1" != torch-1.13 ] && continue
		echo "$mode"
	done
}

# Median step time (us) over the steady steps, from the script's own log.
step_time() {
	python3 - "$1" "$first_steady_step" <<'PY'
import json, statistics, sys
starts = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "api" and r.get("stage") == "train":
        starts.setdefault(r["step"], r["ts_ns"])
steps = sorted(starts)
gaps = [(starts[b] - starts[a]) / 1000 for a, b in zip(steps, steps[1:]) if a >= int(sys.argv[2])]
print(f"{statistics.median(gaps):.1f}")
PY
}

# Trace records per steady step (Python calls, scopes, operators).
events_per_step() {
	"$tcheck" dump "$1" --calls-only | python3 -c '
import json, sys
first, last = int(sys.argv[1]), int(sys.argv[2])
n = sum(1 for l in sys.stdin if first <= (json.loads(l).get("step") or -1) < last)
print(f"{n / (last - first):.1f}")' "$first_steady_step" "$(($2 - 1))"
}

# bcc attaches to a running pid: the workload waits for a file until it has.
run_bcc() {
	local log=$1 steps=$2 ready="$scratch/ready" out="$scratch/bcc.out" pid tracer
	shift 2
	rm -f "$ready"
	/usr/bin/python3 "$workload" --steps "$steps" --no-module-hooks --log "$log" \
		--wait-file "$ready" "$@" >/dev/null &
	pid=$!
	# ucalls is what pythoncalls-bpfcc runs; started directly, it is the pid to stop.
	BCC_KERNEL_SOURCE=$bcc_headers /usr/sbin/ucalls -L -l python "$pid" >"$out" 2>&1 &
	tracer=$!
	for _ in $(seq 600); do
		grep -q "Tracing" "$out" 2>/dev/null && break
		sleep 0.1
	done
	touch "$ready"
	wait "$pid"
	# It does not end with its target; a background job ignores SIGINT.
	kill -TERM "$tracer" 2>/dev/null || true
	wait "$tracer" || true
}

run() {
	local mode=$1 model=$2 round=$3 steps=$4 log
	shift 4
	log="$scratch/$model-$mode-$round.jsonl"
	# record refuses to replace a trace without --force (which older builds lack).
	rm -f "$scratch/t.trace"
	case $mode in
	untraced) $python "$workload" --steps "$steps" --no-module-hooks --log "$log" \
		"$@" >/dev/null ;;
	default)
		"$tcheck" --quiet record -o "$scratch/t.trace" --python -- $python \
			"$workload" --steps "$steps" --no-module-hooks --log "$log" "$@" >/dev/null
		# The deploy mode's rules: inferred once per model from its first reference run.
		[ -f "$scratch/$model.rules" ] ||
			"$tcheck" --quiet infer -o "$scratch/$model.rules" "$scratch/t.trace"
		[ -f "$scratch/$model.torch.rules" ] ||
			"$tcheck" --quiet infer --torch-level -o "$scratch/$model.torch.rules" \
				"$scratch/t.trace" ;;
	deploy) "$tcheck" --quiet record -o "$scratch/t.trace" --rules "$scratch/$model.rules" \
		-- $python "$workload" --steps "$steps" --no-module-hooks --log "$log" "$@" \
		>/dev/null ;;
	torchlevel) "$tcheck" --quiet record -o "$scratch/t.trace" \
		--rules "$scratch/$model.torch.rules" -- $python "$workload" --steps "$steps" \
		--no-module-hooks --log "$log" "$@" >/dev/null ;;
	baseline) "$baseline" --quiet record -o "$scratch/t.trace" --rules "$scratch/$model.rules" \
		-- $python "$workload" --steps "$steps" --no-module-hooks --log "$log" "$@" \
		>/dev/null ;;
	everything) "$tcheck" --quiet record -o "$scratch/t.trace" --python-filter "" "${ops[@]}" \
		-- $python "$workload" --steps "$steps" --no-module-hooks --log "$log" \
		"$@" >/dev/null ;;
	bcc) run_bcc "$log" "$steps" "$@" ;;
	esac
	step_time "$log" >"$scratch/$model-$mode-$round.us"
	case $mode in
	default | deploy | torchlevel | baseline | everything) events_per_step "$scratch/t.trace" "$steps" \
		>"$scratch/$model-$mode-$round.events" ;;
	esac
}

# The options of a traced variant's recorder (one model's rules).
record_options() {
	case $1 in
	default) echo "--python" ;;
	deploy) echo "--rules $scratch/$2.rules" ;;
	torchlevel) echo "--rules $scratch/$2.torch.rules" ;;
	everything) echo "--python-filter '' ${ops[*]}" ;;
	esac
}

# The kernel's runs of the recorder's BPF programs a steady step (every probe
# hit, sending or not): run_cnt summed over the recorder's programs at two
# moments of one run, over the steps the workload logged in between (its log
# is flushed once a step).
probe_runs_per_step() {
	local mode=$1 model=$2 steps=$3 log="$scratch/runs.jsonl" options workload_options
	shift 3
	options=$(record_options "$mode" "$model")
	[ -n "$options" ] || { echo "-"; return; }
	workload_options=$(printf '%q ' "$@")
	rm -f "$scratch/runs.trace" "$log"
	# The options are words, some quoted: eval runs the recorder, exec makes it the pid.
	recorder_runs_per_step logged_step "$first_steady_step" $((steps - 2)) \
		eval "exec \"\$tcheck\" --quiet record -o \"\$scratch/runs.trace\" $options -- \$python \
		\"\$workload\" --steps \"\$steps\" --no-module-hooks --log \"\$log\" $workload_options"
}

# The last step the workload logged (its log, flushed once a step), or nothing.
logged_step() {
	tail -n 1 "$scratch/runs.jsonl" 2>/dev/null | sed -n 's/.*"step": \([0-9]*\).*/\1/p' || true
}

floor_before=$(uprobe_floor "$root" "$scratch")
for ((round = 0; round < rounds; round++)); do
	for stack in "${stacks[@]}"; do
		IFS='|' read -r stack_name _ python <<<"$stack"
		for m in "${!models[@]}"; do
			IFS='|' read -r _ steps options <<<"${models[$m]}"
			for mode in $(modes_of "$stack_name"); do
				# shellcheck disable=SC2086 # options are words
				run "$mode" "$stack_name-$m" "$round" "$steps" $options
			done
		done
	done
done

floor_after=$(uprobe_floor "$root" "$scratch")
for stack in "${stacks[@]}"; do
	IFS='|' read -r stack_name _ python <<<"$stack"
	for m in "${!models[@]}"; do
		IFS='|' read -r _ steps options <<<"${models[$m]}"
		for mode in $(modes_of "$stack_name"); do
			# shellcheck disable=SC2086 # options are words
			probe_runs_per_step "$mode" "$stack_name-$m" "$steps" $options \
				>"$scratch/$stack_name-$m-$mode.runs"
		done
	done
done

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# Per round: traced over the same round's untraced run; then the median.
ratio() {
	local model=$1 mode=$2
	for ((round = 0; round < rounds; round++)); do
		awk -v t="$(cat "$scratch/$model-$mode-$round.us")" \
			-v u="$(cat "$scratch/$model-untraced-$round.us")" 'BEGIN { printf "%.4f\n", t / u }'
	done | median
}
label() {
	case $1 in
	untraced) echo "untraced" ;;
	default) echo "\`--python\` (default selection: the reference recording)" ;;
	deploy) echo "\`--rules\` (deploy: the rules of a \`--python\` run, checked live)" ;;
	torchlevel) echo "\`--rules\` of \`infer --torch-level\` (deploy, torch's probes only)" ;;
	everything) echo "\`--python-filter '' --torch-op add_ --torch-op mul_ --torch-op zero_\`" ;;
	bcc) echo "bcc \`ucalls -L -l python\` (pythoncalls-bpfcc, USDT)" ;;
	baseline) echo "earlier build: \`--rules\`, the same rules (\`$baseline\`)" ;;
	esac
}

echo "### Python tracing: training-step time"
echo
echo "Command: \`make bench\` (tools/bench/python-overhead.sh), $(date -u '+%Y-%m-%d %H:%M UTC'),"
echo "kernel $(uname -r), $cpus CPUs shared with other work, $rounds rounds; uprobe floor (an"
echo "empty entry and return probe pair on the NCCL test double's ncclAllReduce) $floor_before ns"
echo "before the rounds and $floor_after ns after."
echo
echo "\`tests/workloads/python/train_cpu.py --no-module-hooks\` with SGD (momentum 0.9), CPU,"
echo "one torch thread (OMP_NUM_THREADS=1), on each torch stack. Step time: median over steps $first_steady_step on"
echo "of one run; each round runs every variant once, in turn; \"vs untraced\" is the"
echo "median over rounds of traced / untraced of the same round (same stack); events: trace records"
echo "(Python calls, torch scopes, torch operators) per steady step; probe runs: the kernel's"
echo "runs of the recorder's BPF programs a steady step (bpf_stats, one more run of the variant),"
echo "sending or not, machine-wide: other processes that map the same python or libtorch files on"
echo "this shared machine add theirs, so the column is an upper bound for the traced process."
for stack in "${stacks[@]}"; do
	IFS='|' read -r stack_name stack_label _ <<<"$stack"
	for m in "${!models[@]}"; do
		IFS='|' read -r name steps options <<<"${models[$m]}"
		key="$stack_name-$m"
		base=$(cat "$scratch/$key"-untraced-*.us | median)
		echo
		echo "**$stack_label: $name** (\`--steps $steps${options:+ $options}\`)"
		echo
		echo "| Variant | step time (us) | vs untraced | events per step | probe runs per step |"
		echo "|---|---:|---:|---:|---:|"
		echo "| untraced | $base | 1.000 | - | - |"
		for mode in $(modes_of "$stack_name"); do
			[ "$mode" = untraced ] && continue
			us=$(cat "$scratch/$key-$mode"-*.us | median)
			events=-
			[ "$mode" = bcc ] || events=$(cat "$scratch/$key-$mode"-*.events | median)
			echo "| $(label "$mode") | $us | $(ratio "$key" "$mode") | $events |" \
				"$(cat "$scratch/$key-$mode.runs" 2>/dev/null || echo -) |"
		done
	done
done
echo
if [ -n "$bcc_headers" ]; then
	echo "bcc runs here only with kernel headers it can compile against: this kernel has"
	echo "no headers package and no CONFIG_IKHEADERS, so the script joins Debian's"
	echo "linux-headers (another kernel's; its USDT programs need only pt_regs) and sets"
	echo "BCC_KERNEL_SOURCE. \`-L\` enables CPython's function__entry and function__return"
	echo "probes; on 3.11 the return probe fires for every Python function, inlined or not."
else
	echo "bcc's pythoncalls is not in the table: bpfcc-tools is not installed, or no"
	echo "kernel headers (/lib/modules/\$(uname -r)/build, or Debian's linux-headers-amd64"
	echo "to borrow) are there for it to compile against."
fi
