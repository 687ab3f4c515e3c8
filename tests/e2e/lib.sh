# Shared set-up for the end-to-end tests: paths, a scratch folder that is
# removed on exit, and helpers to fail with a reason.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TCHECK="$ROOT/tcheck-bpf"
TEST_BIN="$ROOT/.output/tests"
WORKLOAD="$TEST_BIN/nccl-workload"
REAL_NCCL=/usr/local/cuda/lib/libnccl.so.2
SCRATCH=$(mktemp -d /tmp/tcheck-e2e.XXXXXX)
BACKGROUND_PIDS=()
# Programs the evaluation suites (tools/eval/) record side by side, each under a recorder of
# its own (their results do not depend on it). Two: a recorder's uprobes trap in every
# process that maps the probed file, so each one more makes every recorded program's traps
# dearer.
EVAL_JOBS=${EVAL_JOBS:-2}

# Prints a process's descendants, deepest first.
descendants_of() {
	local child
	for child in $(pgrep -P "$1" 2>/dev/null); do
		descendants_of "$child"
		echo "$child"
	done
}

# True while a process exists and is not a zombie.
process_running() {
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# Kills each background process with its descendants (a workload's ranks
# outlive their launcher otherwise and keep writing into the scratch
# folder), waits for them to go, then removes the scratch folder.
cleanup() {
	local pid victims=()
	for pid in "${BACKGROUND_PIDS[@]}"; do
		victims+=($(descendants_of "$pid") "$pid")
	done
	for pid in "${victims[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
	done
	local deadline=$((SECONDS + 5))
	for pid in "${victims[@]}"; do
		while process_running "$pid" && [ $SECONDS -lt $deadline ]; do
			sleep 0.02
		done
	done
	rm -rf "$SCRATCH" 2>/dev/null || { sleep 0.2; rm -rf "$SCRATCH"; }
}
trap cleanup EXIT

fail() {
	echo "FAILED: $*" >&2
	exit 1
}

skip() {
	echo "$*"
	exit 77
}

# What a snapshot's --json output says it judged: its summary, then each process's
# threads inside a collective and its process groups' sequence numbers.
snapshot_summary() {
	python3 - "$1" <<'PY' 2>/dev/null || echo "(no summary in $1)"
import json, sys
snapshot = json.load(open(sys.argv[1]))
print(snapshot["summary"])
for process in snapshot["processes"]:
    inside = [(t["tid"], t["native"]["collective"]) for t in process["threads"]
              if t.get("native") and t["native"].get("collective")]
    groups = [(g["backend"], g["seq"]) for g in process.get("process_groups", [])]
    print("rank", process["rank"], "pid", process["pid"], "inside:", inside, "groups:", groups)
PY
}

# The pid a rank's own log names: its first record's "pid".
log_pid() {
	sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$1" 2>/dev/null | head -n 1
}

# Waits up to $2 seconds (30) until process $1 has used no CPU for half a
# second and its main thread sleeps: it is blocked somewhere (a rank waiting
# in a collective another rank never joins), no longer on its way there (a
# runnable process that a busy machine kept off the CPUs is not asleep).
wait_until_blocked() {
	local pid=$1 limit=${2:-30} start=$SECONDS before after state
	before=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) || fail "pid $pid is gone"
	while [ $((SECONDS - start)) -lt "$limit" ]; do
		sleep 0.5
		after=$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null) || fail "pid $pid is gone"
		state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
		[ "$after" = "$before" ] && [ "$state" = S ] && return 0
		before=$after
	done
	fail "pid $pid was still running after $limit s"
}

# Waits up to $2 seconds for a file to exist.
wait_for_file() {
	local deadline=$((SECONDS + $2))
	while [ ! -e "$1" ]; do
		[ $SECONDS -lt $deadline ] || fail "timed out waiting for $1"
		sleep 0.05
	done
}

# wait_for_lines FILE COUNT PATTERN SECONDS: waits until FILE holds COUNT
# lines matching the extended regular expression PATTERN: what a test waits
# for instead of sleeping for a guessed time (a recorder's "tracing" line
# says its probes are in place).
wait_for_lines() {
	local deadline=$((SECONDS + $4)) found
	while :; do
		found=$(grep -cE -- "$3" "$1" 2>/dev/null || true)
		[ "${found:-0}" -ge "$2" ] && return
		[ $SECONDS -lt $deadline ] ||
			fail "timed out after $4 s waiting for $2 line(s) matching '$3' in $1: $(tail -n 3 "$1" 2>/dev/null)"
		sleep 0.05
	done
}

# until_passes SECONDS WHAT CMD...: runs CMD (which reads afresh what it
# checks) every half second until it exits 0, for state that settles at its
# own pace (the agent's metrics refresh every 2 s) instead of sleeping a
# guessed time; fails saying WHAT and CMD's last output.
until_passes() {
	local deadline=$((SECONDS + $1)) what=$2 out
	shift 2
	until out=$("$@" 2>&1); do
		[ $SECONDS -lt $deadline ] || fail "$what: $out"
		sleep 0.5
	done
	[ -z "$out" ] || echo "$out"
}

# The torch stack a Python test runs on: run-all.sh runs each test that
# sources torch_stack once per stack, with TCHECK_TORCH_STACK set.
#   torch-1.13: Debian 12's python3.11 and python3-torch, on the host.
#   torch-2.6: Debian trixie's python3.13 and python3-torch, chrooted into
#     the root `tools/stacks/torch-root.sh trixie` builds (a job in a chroot:
#     its maps name files by their host paths).
#   torch-2.14: Debian sid's python3.14 and python3-torch, chrooted the same
#     way into the root `tools/stacks/torch-root.sh sid` builds.
# Sets TORCH_PYTHON, the command line that runs that stack's python3 (use it
# unquoted), and TORCH_STACK_ROOT (empty on the host); skips the test when
# the stack is not installed, except in CI.
TORCH_STACK=${TCHECK_TORCH_STACK:-torch-1.13}
TORCH2_ROOT=${TCHECK_TORCH2_ROOT:-/var/cache/tcheck-bpf/trixie-torch}
TORCH214_ROOT=${TCHECK_TORCH214_ROOT:-/var/cache/tcheck-bpf/sid-torch}
# The eval suites' option (used unquoted) that shares the references' rules of a torch stack
# among the suites of one run of run-all.sh (its folder E2E_SHARED): the first suite records
# the references and infers, the others take its rules. Empty for a test run by itself.
SHARED_REFERENCES=${E2E_SHARED:+--shared-references $E2E_SHARED/references-$TORCH_STACK}
torch_stack() {
	local suite
	case $TORCH_STACK in
	torch-1.13)
		/usr/bin/python3 -c 'import torch' 2>/dev/null || skip "Debian's python3-torch is not installed"
		TORCH_STACK_ROOT=""
		TORCH_PYTHON=/usr/bin/python3 ;;
	torch-2.6) TORCH_STACK_ROOT=$TORCH2_ROOT suite=trixie ;;
	torch-2.14) TORCH_STACK_ROOT=$TORCH214_ROOT suite=sid ;;
	*) fail "unknown torch stack $TORCH_STACK" ;;
	esac
	if [ -n "$TORCH_STACK_ROOT" ]; then
		if [ ! -f "$TORCH_STACK_ROOT/.tcheck-ready" ]; then
			[ "${CI:-}" = true ] && fail "the $TORCH_STACK root is missing: CI builds it with tools/stacks/torch-root.sh $suite"
			skip "no $TORCH_STACK root at $TORCH_STACK_ROOT (tools/stacks/torch-root.sh $suite builds it)"
		fi
		TORCH_PYTHON="$ROOT/tools/stacks/in-root.sh $TORCH_STACK_ROOT --share $ROOT --share /tmp -- /usr/bin/python3"
	fi
	echo "torch stack: $TORCH_STACK"
}

# Live and offline checking of one run report the same violations: the
# violation lines of record --rules --events (LIVE) against those of check
# --rules --jsonl on the trace it wrote (OFFLINE), by rule, process, job
# rank, step and offending event. At least MIN (default 1) of them.
same_violations() {
	python3 - "$1" "$2" "${3:-1}" <<'PY'
import json, sys
def violations(path, live):
    found = []
    for line in open(path):
        v = json.loads(line)
        if live and v.get("kind") != "violation":
            continue
        assert v["kind"] == "violation" and {"step", "job_rank", "relation", "invariant"} <= v.keys(), v
        e = v["event"]
        found.append((v["rule"], v["pid"], v["job_rank"], v["step"], v["relation"], v["invariant"],
                      e["name"], e["entry_ns"]))
    return sorted(found)
live, offline = violations(sys.argv[1], True), violations(sys.argv[2], False)
assert live == offline, ("live", live, "offline", offline)
assert len(live) >= int(sys.argv[3]), live
print(f"{len(live)} violation(s), the same live and offline")
PY
}

# ddp_run NAME ARGS...: records a train_ddp.py run (torch_stack's Python) with
# --python and --events into $SCRATCH/NAME: events.jsonl, trace, out,
# check.jsonl (check --json) and calls.jsonl (dump); log/ holds the ranks' logs.
ddp_run() {
	local name=$1
	shift
	mkdir -p "$SCRATCH/$name"
	"$TCHECK" record --python --events "$SCRATCH/$name/events.jsonl" -o "$SCRATCH/$name/trace" \
		-- $TORCH_PYTHON "$ROOT/tests/workloads/python/train_ddp.py" \
		--log-dir "$SCRATCH/$name/log" "$@" >"$SCRATCH/$name/out" 2>&1 || true
	"$TCHECK" check --json "$SCRATCH/$name/trace" >"$SCRATCH/$name/check.jsonl" 2>/dev/null || true
	"$TCHECK" dump "$SCRATCH/$name/trace" >"$SCRATCH/$name/calls.jsonl" ||
		fail "dump of the $name run: $(tail -3 "$SCRATCH/$name/out")"
}

# A TCP port on 127.0.0.1 free now, the first of FIRST..LAST-1 that binds.
free_port() {
	python3 - "$1" "$2" <<'PY'
import socket, sys
for port in range(int(sys.argv[1]), int(sys.argv[2])):
    try:
        socket.socket().bind(("127.0.0.1", port)); print(port); break
    except OSError:
        pass
PY
}

# wait_agent_events FILE COUNT EVENT TEXT: waits up to 20 s for COUNT process
# events EVENT ("attached", "ended") whose line holds TEXT in the agent's
# events stream FILE.
wait_agent_events() {
	for _ in $(seq 200); do
		[ "$(grep -c "\"event\":\"$3\".*$4" "$1" 2>/dev/null)" -ge "$2" ] && return
		sleep 0.1
	done
	fail "the agent did not report $2 '$3' events of $4: $(cat "$1")"
}

# start_unprobeable DIR: starts a process that maps the library the kernel
# refuses to probe (x86-64) and exits 0 once DIR/go exists; its pid in
# UNPROBEABLE_PID.
start_unprobeable() {
	mkdir -p "$1"
	python3 -c 'import ctypes, os, sys, time
ctypes.CDLL(sys.argv[1])
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)' "$TEST_BIN/lib/libnccl-unprobeable.so" "$1/go" &
	UNPROBEABLE_PID=$!
	BACKGROUND_PIDS+=("$UNPROBEABLE_PID")
}
