#!/bin/bash
# Two nodes simulated as network namespaces, each running an agent over its
# own ranks of one 4-rank job, and a real Prometheus scraping both with the
# shipped rules (thresholds shortened to test time). Rank 2 stalls at step
# 6: the hang alert must fire naming rank 2, `tcheck-bpf analyze
# --prometheus` must name rank 2 as the rank the others wait for, and every
# rank's sequence numbers must agree with its own log.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || skip "prometheus is not installed (make deps)"
command -v ip >/dev/null || skip "iproute2 is not installed (make deps)"
command -v curl >/dev/null || skip "curl is not installed"
suffix=$$
namespaces=()
cleanup_namespaces() {
	for name in "${namespaces[@]}"; do
		ip netns pids "$name" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$name" 2>/dev/null || true
		ip link del "veth-$name" 2>/dev/null || true
	done
}
trap 'cleanup_namespaces; cleanup' EXIT

# Node N: namespace tcn-N with 10.231.N.2, reached from here at 10.231.N.1.
for node in 1 2; do
	name="tcn$node-$suffix"
	namespaces+=("$name")
	ip netns add "$name" || skip "cannot create network namespaces here"
	ip link add "veth-$name" type veth peer name eth0 netns "$name"
	ip addr add "10.231.$node.1/24" dev "veth-$name"
	ip link set "veth-$name" up
	ip netns exec "$name" ip addr add "10.231.$node.2/24" dev eth0
	ip netns exec "$name" ip link set eth0 up
	ip netns exec "$name" ip link set lo up
done
events="$SCRATCH/events.jsonl"
ip netns exec "tcn1-$suffix" "$TCHECK" agent --listen 10.231.1.2:9477 --ranks 0-1 \
	--select "$SCRATCH/job" --events "$SCRATCH/events-1.jsonl" --duration 150 \
	>"$SCRATCH/agent-1.log" 2>&1 &
BACKGROUND_PIDS+=($!)
ip netns exec "tcn2-$suffix" "$TCHECK" agent --listen 10.231.2.2:9477 --ranks 2-3 \
	--select "$SCRATCH/job" --events "$SCRATCH/events-2.jsonl" --duration 150 \
	>"$SCRATCH/agent-2.log" 2>&1 &
BACKGROUND_PIDS+=($!)

# Prometheus with the shipped rules, waiting 3 s instead of a minute.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -e 's/idle_seconds > 60/idle_seconds > 3/' -e 's/idle_seconds > 120/idle_seconds > 3/' \
	-e 's/for: 30s/for: 1s/' "$ROOT/tools/deploy/prometheus/rules.yaml" >"$SCRATCH/rules.yaml"
cat >"$SCRATCH/prometheus.yml" <<CONFIG
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $SCRATCH/rules.yaml
scrape_configs:
  - job_name: tcheck-bpf
    static_configs:
      - targets: ["10.231.1.2:9477"]
        labels: {node: node-1}
      - targets: ["10.231.2.2:9477"]
        labels: {node: node-2}
CONFIG
prometheus --config.file="$SCRATCH/prometheus.yml" --storage.tsdb.path="$SCRATCH/tsdb" \
	--web.listen-address="127.0.0.1:$port" >"$SCRATCH/prometheus.log" 2>&1 &
BACKGROUND_PIDS+=($!)
url="http://127.0.0.1:$port"
query() { curl -sf "$url/api/v1/query" --data-urlencode "query=$1"; }
for _ in $(seq 150); do
	[ "$(query 'count(up == 1)' | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)' 2>/dev/null)" = 2 ] && break
	sleep 0.2
done
[ "$(query 'count(up == 1)' | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')" = 2 ] ||
	fail "Prometheus does not reach both agents: $(tail -5 "$SCRATCH/prometheus.log")"

mkdir -p "$SCRATCH/job"
LD_LIBRARY_PATH="$TEST_BIN/lib" "$WORKLOAD" --ranks 4 --steps 40 --step-sleep-ms 20 \
	--stall 2:6 --log-dir "$SCRATCH/job" --wait-file "$SCRATCH/job/go" >"$SCRATCH/job.out" 2>&1 &
BACKGROUND_PIDS+=($!)
for _ in $(seq 200); do
	attached=$(cat "$SCRATCH"/events-*.jsonl 2>/dev/null | grep -c '"attached"' || true)
	[ "$attached" -ge 4 ] && break
	sleep 0.1
done
[ "$attached" -ge 4 ] || fail "the agents found $attached of 4 ranks"
touch "$SCRATCH/job/go"

# The alert names rank 2.
fired=""
for _ in $(seq 120); do
	fired=$(curl -sf "$url/api/v1/alerts" | python3 -c '
import json, sys
alerts = json.load(sys.stdin)["data"]["alerts"]
print(" ".join(sorted({a["labels"].get("rank", "?") for a in alerts
                       if a["labels"]["alertname"] == "TcheckCollectiveHang" and a["state"] == "firing"})))')
	[ -n "$fired" ] && break
	sleep 0.5
done
[ "$fired" = 2 ] || fail "TcheckCollectiveHang fired for rank(s) '$fired', not rank 2"
# One alert for rank 2, whose summary names each communicator it lags on
# and the collective it never joined there, as rank 2's own log and its
# peers' say: on each, one more than the calls rank 2 issued.
curl -sf "$url/api/v1/alerts" >"$SCRATCH/alerts.json"
query tcheck_collective_sequence >"$SCRATCH/sequences.json"
python3 - "$SCRATCH/alerts.json" "$SCRATCH/sequences.json" <<'PY' || fail "the hang alert's summary disagrees with the job"
import json, re, sys
alerts = [a for a in json.load(open(sys.argv[1]))["data"]["alerts"]
          if a["labels"]["alertname"] == "TcheckCollectiveHang" and a["state"] == "firing"]
assert len(alerts) == 1, alerts
summary = alerts[0]["annotations"]["summary"]
match = re.fullmatch(r"Rank 2 never joined (.*); the others have waited (\d+) s", summary)
assert match, summary
assert 3 <= int(match.group(2)) < 600, summary
named = dict((comm, int(seq)) for seq, comm in
             re.findall(r"collective (\d+) on communicator (0x[0-9a-f]{16})", match.group(1)))
sequences = json.load(open(sys.argv[2]))["data"]["result"]
by_comm = {}
for sample in sequences:
    by_comm.setdefault(sample["metric"]["comm"], {})[sample["metric"]["rank"]] = int(float(sample["value"][1]))
lagging = {comm: ranks["2"] + 1 for comm, ranks in by_comm.items()
           if "2" in ranks and ranks["2"] < max(ranks.values())}
assert named == lagging, f"{summary}: the sequences say {lagging}"
print("summary:", summary)
PY

# analyze names rank 2 as the rank the others wait for, on node-2.
set +e
"$TCHECK" analyze --prometheus "$url" --idle 3 --json >"$SCRATCH/analyze.jsonl" 2>"$SCRATCH/analyze.err"
status=$?
set -e
[ "$status" -eq 1 ] || fail "analyze exited $status, not 1 (stalls found): $(cat "$SCRATCH/analyze.err")"
python3 - "$SCRATCH/analyze.jsonl" "$SCRATCH/job" "$url" <<'PY' || fail "analyze or the metrics disagree with the job"
import json, subprocess, sys, urllib.parse, urllib.request
findings = [json.loads(line) for line in open(sys.argv[1])]
first = findings[0]
assert first["classification"] == "ranks_missing", first
assert [r["rank"] for r in first["lagging"]] == ["2"], first
assert first["lagging"][0]["node"] == "node-2", first
# Every running rank's sequence numbers against its own log: the communication
# calls it issued on each communicator, numbered from 0.
communication = {"ncclAllReduce", "ncclBroadcast", "ncclBcast", "ncclReduce", "ncclAllGather",
                 "ncclReduceScatter", "ncclSend", "ncclRecv", "ncclAlltoAll", "ncclGather",
                 "ncclScatter"}
query = urllib.parse.urlencode({"query": "tcheck_collective_sequence"})
result = json.load(urllib.request.urlopen(f"{sys.argv[3]}/api/v1/query?{query}"))["data"]["result"]
issued = {}
for sample in result:
    rank = int(sample["metric"]["rank"])
    issued[rank] = issued.get(rank, 0) + int(float(sample["value"][1])) + 1
for rank in range(4):
    logged = sum(1 for line in open(f"{sys.argv[2]}/rank-{rank}.jsonl")
                 if (c := json.loads(line))["name"] in communication and c["ret"] == 0)
    assert issued.get(rank) == logged, f"rank {rank}: sequences say {issued.get(rank)}, log {logged}"
print("rank 2 named; sequences agree with", sum(issued.values()), "logged calls")
PY
# Each agent's own detector saw its ranks stop: the hang is counted and on its events stream.
hangs=$(query 'sum(tcheck_findings_total{kind="hang"})' | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 0)')
[ "$hangs" -ge 1 ] || fail "no agent counted a hang (tcheck_findings_total{kind=\"hang\"} = $hangs)"
grep -q '"kind": *"hang"' "$SCRATCH"/events-*.jsonl || fail "no hang on the agents' events streams"
"$TCHECK" analyze --prometheus "$url" --idle 3 >"$SCRATCH/analyze.txt" || true
grep -q "rank 2 (pid" "$SCRATCH/analyze.txt" ||
	fail "the text report does not name rank 2: $(cat "$SCRATCH/analyze.txt")"
echo "two nodes: the alert and analyze name rank 2"
