#!/bin/bash
# The shipped Grafana dashboard against real data: an agent (with rules
# inferred from a healthy run) follows a 2-rank test-double job in which rank
# 1 passes a wrong count to one all-reduce, beside a process mapping a library
# the kernel refuses to probe; a real Prometheus scrapes the agent every
# second, labelled with its node as the shipped scrape config and
# ServiceMonitor label it, with the shipped rules. Then every query of every
# panel, and each template variable's, runs against that Prometheus over the
# job's time range and must return data; the findings and violations panels
# must name what the job did (one mismatch, a violation by rank 1, the later
# of the two to reach that all-reduce). The
# dashboard must also pass Grafana's own dashboard schema (@grafana/schema,
# type-checked by the TypeScript compiler: tests/deploy/grafana-schema) and
# the structural checks below.
source "$(dirname "$0")/lib.sh"
command -v prometheus >/dev/null || skip "prometheus is not installed (make deps)"
command -v curl >/dev/null || skip "curl is not installed"
dashboard="$ROOT/tools/deploy/grafana/tcheck-bpf-dashboard.json"
schema="$ROOT/tests/deploy/grafana-schema"
agent_port=19481
prometheus_port=19482

# Grafana's schema: a type error, an unknown key or a bad enumerated value fails.
if command -v node >/dev/null; then
	[ -d "$schema/node_modules/@grafana/schema" ] ||
		fail "@grafana/schema is not installed in $schema (make deps)"
	node "$schema/check_dashboard.cjs" "$dashboard" || fail "the dashboard does not pass Grafana's schema"
else
	[ -z "${CI:-}" ] || fail "node is not installed: Grafana's schema cannot be checked"
	echo "node is not installed: Grafana's schema check skipped"
fi

# Rules from a healthy reference run of the same job.
"$TCHECK" --quiet record -o "$SCRATCH/reference.trace" -- \
	"$WORKLOAD" --ranks 2 --steps 12 --log-dir "$SCRATCH/reference" >/dev/null || fail "reference run"
"$TCHECK" --quiet infer -o "$SCRATCH/rules.json" "$SCRATCH/reference.trace" || fail "infer exited $?"

events="$SCRATCH/events.jsonl"
"$TCHECK" agent --listen "127.0.0.1:$agent_port" --events "$events" --select "$SCRATCH/job" \
	--rules "$SCRATCH/rules.json" --duration 180 >"$SCRATCH/agent.log" 2>&1 &
BACKGROUND_PIDS+=($!)
cat >"$SCRATCH/prometheus.yml" <<CONFIG
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $ROOT/tools/deploy/prometheus/rules.yaml
scrape_configs:
  - job_name: tcheck-bpf
    static_configs:
      - targets: ["127.0.0.1:$agent_port"]
        labels: {node: test-node}
CONFIG
prometheus --config.file="$SCRATCH/prometheus.yml" --storage.tsdb.path="$SCRATCH/tsdb" \
	--web.listen-address="127.0.0.1:$prometheus_port" >"$SCRATCH/prometheus.log" 2>&1 &
BACKGROUND_PIDS+=($!)
url="http://127.0.0.1:$prometheus_port"
for _ in $(seq 150); do
	grep -q '"value"' <<<"$(curl -sf "$url/api/v1/query" --data-urlencode 'query=up{job="tcheck-bpf"} == 1')" && break
	sleep 0.2
done
grep -q '"value"' <<<"$(curl -sf "$url/api/v1/query" --data-urlencode 'query=up{job="tcheck-bpf"} == 1')" ||
	fail "Prometheus does not reach the agent: $(tail -3 "$SCRATCH/prometheus.log") $(cat "$SCRATCH/agent.log")"

start=$(date +%s)
# A library the kernel refuses to probe (x86-64 only): the probe-health panel's refusals.
if [ "$(uname -m)" = x86_64 ]; then
	start_unprobeable "$SCRATCH/job-unprobeable"
	wait_agent_events "$events" 1 attached job-unprobeable
fi
# The job: 2 ranks, 40 steps of 100 ms; rank 1 passes count+1 to step 7's
# all-reduce and reaches it 300 ms after rank 0 (a two-rank disagreement names
# the later rank: docs/deployment.md).
mkdir -p "$SCRATCH/job"
LD_LIBRARY_PATH="$TEST_BIN/lib" "$WORKLOAD" --ranks 2 --steps 40 --step-sleep-ms 100 \
	--mismatch-count 1:7 --delay 1:7:collective:300 --log-dir "$SCRATCH/job" --wait-file "$SCRATCH/job/go" \
	>"$SCRATCH/job.out" 2>&1 &
job=$!
BACKGROUND_PIDS+=("$job")
wait_agent_events "$events" 3 attached "job/"
touch "$SCRATCH/job/go"
wait "$job" || fail "the job failed: $(cat "$SCRATCH/job.out")"
touch "$SCRATCH/job-unprobeable/go" 2>/dev/null || true
# Asked until the last scrapes and rule evaluations are in (each try up to now).
dashboard_answers() {
	python3 - "$dashboard" "$url" "$start" "$(date +%s)" <<'PY'
import json, math, re, sys, urllib.parse, urllib.request
path, url, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
dashboard = json.load(open(path))
problems = []

def get(endpoint, **parameters):
    query = urllib.parse.urlencode(parameters, doseq=True)
    answer = json.load(urllib.request.urlopen(f"{url}/api/v1/{endpoint}?{query}"))
    assert answer["status"] == "success", answer
    return answer["data"]

# Structure: ids, refIds, the grid, the data source variable.
panels = dashboard["panels"]
ids = [p["id"] for p in panels]
if len(ids) != len(set(ids)):
    problems.append(f"panel ids repeat: {ids}")
occupied = set()
for p in panels:
    g = p["gridPos"]
    if g["x"] < 0 or g["x"] + g["w"] > 24 or g["w"] <= 0 or g["h"] <= 0:
        problems.append(f"panel {p['title']}: outside the 24-column grid: {g}")
    cells = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
    if cells & occupied:
        problems.append(f"panel {p['title']} overlaps another")
    occupied |= cells
    if p["type"] == "row":
        continue
    if p.get("datasource", {}).get("uid") != "${datasource}":
        problems.append(f"panel {p['title']}: not on the dashboard's Prometheus variable")
    refs = [t["refId"] for t in p["targets"]]
    if len(refs) != len(set(refs)) or not refs:
        problems.append(f"panel {p['title']}: refIds {refs}")
variables = {v["name"]: v for v in dashboard["templating"]["list"]}
if variables.get("datasource", {}).get("query") != "prometheus":
    problems.append("no Prometheus data source variable")

# The template variables' own queries.
for name in ("node", "comm"):
    m = re.fullmatch(r"label_values\((.*), (\w+)\)", variables[name]["query"]["query"])
    selector, label = m.group(1).replace("$node", ".*"), m.group(2)
    values = get(f"label/{label}/values", **{"match[]": selector, "start": start, "end": end})
    print(f"variable {name}: {values}")
    if not values:
        problems.append(f"variable {name} has no value")
if "test-node" not in get("label/node/values", **{"match[]": "tcheck_build_info"}):
    problems.append("the node label is not on the agent's series")

# Every panel query over the job's time range, as Grafana would send it.
substitutions = {"$__rate_interval": "5s", "$__range": f"{end - start}s", "$node": ".*",
                 "$comm": ".*"}
results = {}
for p in panels:
    for t in p.get("targets", []):
        expr = t["expr"]
        for name, value in substitutions.items():
            expr = expr.replace(name, value)
        assert "$" not in expr, expr
        series = get("query_range", query=expr, start=start, end=end, step=1)["result"]
        finite = [s for s in series if any(math.isfinite(float(v)) for _, v in s["values"])]
        results[(p["title"], t["refId"])] = finite
        print(f"{p['title']} [{t['refId']}]: {len(finite)} series with data")
        if not finite:
            problems.append(f"panel '{p['title']}' query {t['refId']} returns no data: {expr}")

# What the job did, as the panels show it.
def peak(title, ref, **labels):
    return max((float(v) for s in results.get((title, ref), [])
                if all(s["metric"].get(k) == v for k, v in labels.items())
                for _, v in s["values"] if math.isfinite(float(v))), default=0)
if peak("Findings in the time range", "A", kind="mismatch") < 1:
    problems.append("the findings panel shows no mismatch")
if peak("Rule violations", "A", rank="1") < 1:
    problems.append("the violations panel does not name rank 1")
if peak("Rule violations", "A", rank="0") > 0:
    problems.append("the violations panel names rank 0, which broke nothing")
if peak("Steps per second", "A") <= 0:
    problems.append("no steps per second")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
}
until_passes 30 "the dashboard's queries do not all return data" dashboard_answers
echo "every panel's query returned data"
