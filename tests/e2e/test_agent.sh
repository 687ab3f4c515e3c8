#!/bin/bash
# The node agent finds a job's rank processes by itself, attaches before
# their first NCCL call, and serves Prometheus metrics that agree with the
# ranks' own logs (calls per function, communicator sequence numbers); it
# follows them out when they end, and a third job does not grow its probes
# or file descriptors over the second's (no leak per process).
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl is not installed"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
events="$SCRATCH/events.jsonl"
# --select keeps the agent to this test's processes on a shared machine.
# Only the three capabilities the deployment grants (docs/deployment.md): the
# bounding set leaves uid 0 nothing else.
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
setpriv --bounding-set=-all,+bpf,+perfmon,+sys_ptrace --inh-caps=-all -- \
	"$TCHECK" agent --listen "127.0.0.1:$port" --events "$events" --select "$SCRATCH/job" \
	--retention 120 --duration 120 >"$SCRATCH/agent.log" 2>&1 &
agent=$!
BACKGROUND_PIDS+=("$agent")
for _ in $(seq 100); do
	curl -sf "http://127.0.0.1:$port/metrics" >/dev/null && break
	sleep 0.1
done
grep -q '^tcheck_attached_processes 0$' <<<"$(curl -sf "http://127.0.0.1:$port/metrics")" ||
	fail "the agent does not serve metrics on port $port: $(cat "$SCRATCH/agent.log")"
# CAP_BPF (39), CAP_PERFMON (38), CAP_SYS_PTRACE (19) and nothing else.
[ "$(awk '/^CapEff/ { print $2 }' "/proc/$agent/status")" = 000000c000080000 ] ||
	fail "the agent runs with capabilities $(awk '/^CapEff/ { print $2 }' "/proc/$agent/status"), not only BPF, PERFMON and SYS_PTRACE"

# (Sequence numbers against the logs: tests/e2e/test_prometheus_two_nodes.sh, on a stalled job.)
# How many of job NAME's processes have an EVENT ("attached", "ended") on the stream:
# distinct pids, for a process's record is written again when it changes (its exec).
job_pids() { # EVENT NAME
	grep "\"event\":\"$1\".*job-$2" "$events" 2>/dev/null |
		sed -n 's/.*"pid":\([0-9]*\).*/\1/p' | sort -u | wc -l
}
# A job whose ranks wait at a gate until the agent has attached to all three processes.
run_job() { # NAME
	local dir="$SCRATCH/job-$1"
	mkdir -p "$dir"
	LD_LIBRARY_PATH="$TEST_BIN/lib" "$WORKLOAD" --ranks 2 --steps 12 \
		--log-dir "$dir" --wait-file "$dir/go" >"$dir/out" 2>&1 &
	local job=$!
	BACKGROUND_PIDS+=("$job")
	for _ in $(seq 200); do
		[ "$(job_pids attached "$1")" -ge 3 ] && break
		sleep 0.1
	done
	[ "$(job_pids attached "$1")" -ge 3 ] ||
		fail "the agent did not find job $1's processes: $(cat "$events")"
	touch "$dir/go"
	wait "$job" || fail "job $1 failed: $(cat "$dir/out")"
	for _ in $(seq 100); do
		[ "$(job_pids ended "$1")" -ge 3 ] && break
		sleep 0.1
	done
	[ "$(job_pids ended "$1")" -ge 3 ] ||
		fail "the agent did not see job $1 end: $(cat "$events")"
}

run_job first
curl -sf "http://127.0.0.1:$port/metrics" >"$SCRATCH/first.prom"
python3 - "$SCRATCH/first.prom" "$SCRATCH/job-first" "$events" <<'PY' || fail "metrics disagree with the ranks' logs"
import collections, json, re, sys
prom, job, events = sys.argv[1:4]
pids = {}
for line in open(events):
    event = json.loads(line)
    if event.get("kind") == "process" and "job-first" in event["command"] and event["rank"] is not None:
        pids[str(event["pid"])] = event["rank"]
assert len(pids) == 2, pids
calls, sequences, hits = collections.Counter(), collections.defaultdict(int), collections.Counter()
for line in open(prom):
    m = re.match(r'(tcheck_\w+)\{(.*)\} (\S+)$', line.strip())
    if not m:
        continue
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
    if labels.get("pid") not in pids:
        continue
    rank = pids[labels["pid"]]
    assert labels["rank"] == str(rank), (labels, rank)
    if m.group(1) == "tcheck_nccl_calls_total":
        calls[rank, labels["function"]] += int(float(m.group(3)))
    if m.group(1) == "tcheck_collective_sequence":
        sequences[rank] += 1
    if m.group(1) == "tcheck_probe_hits_total":
        hits[rank, labels["kind"]] += int(float(m.group(3)))
for rank in (0, 1):
    logged = collections.Counter()
    for line in open(f"{job}/rank-{rank}.jsonl"):
        call = json.loads(line)
        # The workload marks the calls the probes keep out by design (healthy
        # ncclCommGetAsyncError polls).
        if call.get("tracer_filtered"):
            continue
        logged[rank, call["name"]] += 1
    mine = {k: v for k, v in calls.items() if k[0] == rank}
    assert mine == dict(logged), f"rank {rank}: metrics {mine} != log {dict(logged)}"
    # Every call the probes kept is one hit, and so is the ncclBroadcast the
    # double's ncclBcast makes (tests/nccl_double/double_collectives.c); no Python.
    mine_hits = {k[1]: v for k, v in hits.items() if k[0] == rank}
    want_hits = sum(logged.values()) + logged[rank, "ncclBcast"]
    assert mine_hits == {"nccl_call": want_hits}, f"rank {rank}: hits {mine_hits}, want {want_hits}"
    # An ended rank waits for nothing: its positions are gone, only its counters stay.
    assert sequences[rank] == 0, f"rank {rank} still has {sequences[rank]} sequence series"
print("metrics agree with", sum(calls.values()), "logged calls")
PY
grep -q '^tcheck_attached_processes 0$' "$SCRATCH/first.prom" ||
	fail "processes still counted as attached after they ended"

# The agent's descriptors over LOOKS tenths of a second, the most or the fewest (WHICH:
# -gt or -lt). Its look for new processes holds a folder of /proc and a file open for a
# moment, longer on a machine busy with other jobs; what it sets up once may come with the
# first job or later. A descriptor each job leaks stays through every look of a later job.
# A descriptor the agent closes between the listing and a look at it is not an
# error: the count is the listing's (a glob, no look at each entry), and the kinds
# skip a descriptor gone by the time its link is read.
descriptors() { # WHICH LOOKS
	local kept="" count listed
	for _ in $(seq "$2"); do
		listed=("/proc/$agent/fd/"*)
		count=${#listed[@]}
		if [ -z "$kept" ] || [ "$count" "$1" "$kept" ]; then kept=$count; fi
		sleep 0.1
	done
	echo "$kept"
}
# What the descriptors are, by kind (bpf_link, perf_event, a file's path).
descriptor_kinds() {
	local descriptor
	for descriptor in "/proc/$agent/fd/"*; do
		readlink "$descriptor" 2>/dev/null || true
	done | sed 's/\[[0-9]*\]$//' | sort | uniq -c
}
run_job second
descriptors_after_second=$(descriptors -gt 10)
kinds_after_second=$(descriptor_kinds)
run_job third
descriptors_after_third=$(descriptors -lt 30)
[ "$descriptors_after_third" -le "$descriptors_after_second" ] ||
	fail "the agent holds $descriptors_after_third descriptors after a third job, $descriptors_after_second after the second: probes leak. After the second: $kinds_after_second. Now: $(descriptor_kinds)"
kill -TERM "$agent"
wait "$agent" || fail "the agent did not stop cleanly on SIGTERM: $(cat "$SCRATCH/agent.log")"
echo "agent: three jobs followed, metrics match the logs"
