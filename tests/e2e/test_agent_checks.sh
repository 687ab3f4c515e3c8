#!/bin/bash
# What the node agent checks besides progress: rules inferred from a healthy
# run flag, live, the all-reduce whose count one rank got wrong (as a JSON
# Lines event and in tcheck_violations_total, naming that rank and the rule's
# position in the rules file) and nothing on a healthy job; the step-time
# histogram agrees with what the workload did (every step sleeps 100 ms, as
# many steps as its log holds, within the job's lifetime); and a library the
# kernel refuses to probe is counted in tcheck_probe_attach_failures_total
# while the process that maps it runs on unharmed.
source "$(dirname "$0")/lib.sh"
command -v curl >/dev/null || skip "curl is not installed"
STEPS=12
SLEEP_MS=100
JOB=(--ranks 2 --steps "$STEPS" --step-sleep-ms "$SLEEP_MS")

# Rules from a healthy reference run of the same job.
"$TCHECK" --quiet record -o "$SCRATCH/reference.trace" -- \
	"$WORKLOAD" --ranks 2 --steps "$STEPS" --log-dir "$SCRATCH/reference" >/dev/null ||
	fail "reference run"
"$TCHECK" --quiet infer -o "$SCRATCH/rules.json" "$SCRATCH/reference.trace" || fail "infer exited $?"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
events="$SCRATCH/events.jsonl"
metrics() { curl -sf "http://127.0.0.1:$port/metrics"; }

# A rules file that cannot be read stops the agent with a sentence and status 2.
echo '{"rules": [' >"$SCRATCH/corrupt.json"
status=0
"$TCHECK" agent --listen 127.0.0.1:0 --rules "$SCRATCH/corrupt.json" --duration 5 \
	2>"$SCRATCH/err" || status=$?
[ "$status" = 2 ] && grep -q "corrupt.json is not valid JSON" "$SCRATCH/err" ||
	fail "agent with a corrupt rules file: status $status, $(cat "$SCRATCH/err")"

# --select keeps the agent to this test's processes on a shared machine.
"$TCHECK" agent --listen "127.0.0.1:$port" --events "$events" --select "$SCRATCH/job" \
	--rules "$SCRATCH/rules.json" --retention 120 --duration 120 >"$SCRATCH/agent.log" 2>&1 &
agent=$!
BACKGROUND_PIDS+=("$agent")
for _ in $(seq 100); do
	metrics >/dev/null && break
	sleep 0.1
done
metrics >"$SCRATCH/start.prom" || fail "the agent does not serve metrics: $(cat "$SCRATCH/agent.log")"
grep -q '^# TYPE tcheck_step_duration_seconds histogram$' "$SCRATCH/start.prom" ||
	fail "no step-time histogram declared"
! grep -q '^tcheck_probe_attach_failures_total{' "$SCRATCH/start.prom" ||
	fail "attach failures counted before any process"

wait_events() { # COUNT EVENT JOB
	wait_agent_events "$events" "$@"
}

# Probe attach failure: a process maps a library that looks like NCCL and
# cannot be probed; it waits for a file, then exits 0 if nothing harmed it.
if [ "$(uname -m)" = x86_64 ]; then
	start_unprobeable "$SCRATCH/job-unprobeable"
	unprobeable=$UNPROBEABLE_PID
	wait_events 1 attached job-unprobeable
	for _ in $(seq 100); do
		grep -q '^tcheck_probe_attach_failures_total{' <<<"$(metrics)" && break
		sleep 0.1
	done
	metrics >"$SCRATCH/unprobeable.prom"
	grep -q '^tcheck_probe_attach_failures_total{library="libnccl-unprobeable.so"} 1$' \
		"$SCRATCH/unprobeable.prom" ||
		fail "the refused attachment is not counted: $(grep attach_failures "$SCRATCH/unprobeable.prom") $(cat "$SCRATCH/agent.log")"
	[ "$(grep -c '^tcheck_probe_attach_failures_total{' "$SCRATCH/unprobeable.prom")" = 1 ] ||
		fail "attach failures for other libraries: $(grep attach_failures "$SCRATCH/unprobeable.prom")"
	touch "$SCRATCH/job-unprobeable/go"
	wait "$unprobeable" || fail "the process mapping the unprobeable library was harmed"
fi

# A job whose ranks wait at a gate until the agent has attached to all three processes.
run_job() { # NAME WORKLOAD-OPTIONS...
	local name=$1 dir="$SCRATCH/job-$1" start end
	shift
	mkdir -p "$dir"
	LD_LIBRARY_PATH="$TEST_BIN/lib" "$WORKLOAD" "${JOB[@]}" "$@" --log-dir "$dir" \
		--wait-file "$dir/go" >"$dir/out" 2>&1 &
	local job=$!
	BACKGROUND_PIDS+=("$job")
	wait_events 3 attached "job-$name"
	start=$(date +%s.%N)
	touch "$dir/go"
	wait "$job" || fail "job $name failed: $(cat "$dir/out")"
	end=$(date +%s.%N)
	echo "$start $end" >"$dir/lifetime"
	wait_events 3 ended "job-$name"
	metrics >"$SCRATCH/$name.prom"
}

run_job healthy
! grep -q '"kind":"violation"' "$events" ||
	fail "violations on a healthy job: $(grep '"kind":"violation"' "$events")"
! grep -q '^tcheck_violations_total{' "$SCRATCH/healthy.prom" || fail "violations counted on a healthy job"

# Rank 1 passes count+1 to the world grad-norm all-reduce of step 7, and
# reaches it 300 ms after rank 0 (so it is the one that disagrees with the
# first arrival: a two-rank disagreement names the later rank).
run_job faulty --mismatch-count 1:7 --delay 1:7:collective:300

python3 - "$SCRATCH" "$STEPS" "$SLEEP_MS" <<'PY' || fail "the agent's checks disagree with the workload"
import collections, json, re, sys
scratch, steps, sleep_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
events = [json.loads(line) for line in open(f"{scratch}/events.jsonl")]
rules = json.load(open(f"{scratch}/rules.json"))["rules"]

def series(path):
    found = []
    for line in open(path):
        m = re.match(r'(tcheck_\w+)\{(.*)\} (\S+)$', line.strip())
        if m:
            found.append((m.group(1), dict(re.findall(r'(\w+)="([^"]*)"', m.group(2))),
                          float(m.group(3))))
    return found

def rank_pids(job):
    return {e["rank"]: e["pid"] for e in events if e.get("kind") == "process"
            and e["event"] == "attached" and f"job-{job}/" in e["command"]
            and e["rank"] is not None}

# The workload's own truth: the call of rank 1 whose count differs.
pids = rank_pids("faulty")
assert sorted(pids) == [0, 1], pids
log = [json.loads(line) for line in open(f"{scratch}/job-faulty/rank-1.jsonl")]
odd = [c for c in log if c["name"] == "ncclAllReduce" and c["step"] == 7 and c["args"]["count"] == 2]
assert len(odd) == 1, odd
odd = odd[0]
assert odd["pid"] == pids[1]

violations = [e for e in events if e.get("kind") == "violation"]
count_rule = [i for i, r in enumerate(rules) if r["relation"] == "Consistent"
              and r["event"]["name"] == "ncclAllReduce" and r["field"] == "count"]
assert len(count_rule) == 1, count_rule
mine = [v for v in violations if v["rule"] == count_rule[0]]
assert len(mine) == 1, violations
v = mine[0]
assert v["relation"] == "Consistent" and "count" in v["invariant"], v
assert v["pid"] == pids[1] and v["event"]["pid"] == pids[1], (v, pids)
assert v["event"]["fields"]["count"] == "2" and v["other"]["fields"]["count"] == "1", v
assert v["other"]["pid"] == pids[0]
assert v["event"]["comm"] == v["other"]["comm"] and v["event"]["seq"] == v["other"]["seq"]

# The metric: the same rank and rule, and as many violations as events.
prom = series(f"{scratch}/faulty.prom")
counted = [(labels, value) for name, labels, value in prom if name == "tcheck_violations_total"]
assert sum(value for _, value in counted) == len(violations), (counted, violations)
labels = {"pid": str(pids[1]), "rank": "1", "rule": str(count_rule[0]),
          "relation": "Consistent", "function": "ncclAllReduce"}
hits = [value for l, value in counted if all(l[k] == labels[k] for k in labels)]
assert hits == [1], (counted, labels)
assert not [l for l, _ in counted if l["pid"] == str(pids[0])], counted

# Step time against the workload: per rank, the communicator measured most often.
start, end = map(float, open(f"{scratch}/job-faulty/lifetime").read().split())
logged_steps = max(c["step"] for c in log) + 1
assert logged_steps == steps, logged_steps
for rank, pid in pids.items():
    counts, sums, low = collections.Counter(), {}, {}
    for name, l, value in prom:
        if l.get("pid") != str(pid):
            continue
        assert l["rank"] == str(rank), l
        if name == "tcheck_step_duration_seconds_count":
            counts[l["comm"]] = value
        elif name == "tcheck_step_duration_seconds_sum":
            sums[l["comm"]] = value
        elif name == "tcheck_step_duration_seconds_bucket" and l["le"] == "0.1":
            low[l["comm"]] = value
    comm, count = counts.most_common(1)[0]
    # Steps 1 to S-1 have a start and an end; the period is found after the first three.
    assert steps - 4 <= count <= steps - 1, (rank, count)
    # Each step sleeps 100 ms: none is shorter, and together they fit in the job's life.
    assert low[comm] == 0, (rank, low)
    assert count * sleep_ms / 1000 <= sums[comm] <= end - start, (rank, sums[comm], end - start)
    expected = [value for name, l, value in prom if name == "tcheck_step_expected_duration_seconds"
                and l["pid"] == str(pid) and l["comm"] == comm]
    assert len(expected) == 1 and sleep_ms / 1000 <= expected[0] <= end - start, expected
    print(f"rank {rank}: {int(count)} steps, mean {sums[comm] / count * 1000:.1f} ms "
          f"(sleep {sleep_ms} ms, job {end - start:.2f} s)")
print(f"violation of rule {count_rule[0]} by rank 1 (pid {pids[1]}) at its logged call")
PY
kill -TERM "$agent"
wait "$agent" || fail "the agent did not stop cleanly on SIGTERM: $(cat "$SCRATCH/agent.log")"
grep -q "events checked against" "$SCRATCH/agent.log" || fail "no rules summary at the end"
echo "agent: rule violation, step time and attach failures as the workload says"
