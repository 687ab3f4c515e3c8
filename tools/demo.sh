#!/bin/bash
# The built-in demo: records a 4-rank job of the NCCL test double (data-,
# tensor- and pipeline-parallel traffic), then shows what the trace holds.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${DEMO_DIR:-/tmp/tcheck-demo}
rm -rf "$out" && mkdir -p "$out"
echo "== recording: tcheck-bpf record -o $out/demo.trace -- nccl-workload --ranks 4 --steps 20"
"$root/tcheck-bpf" record -o "$out/demo.trace" -- \
	"$root/.output/tests/nccl-workload" --ranks 4 --steps 20 --log-dir "$out/ground-truth"
echo
echo "== calls per function (tcheck-bpf dump $out/demo.trace | jq)"
"$root/tcheck-bpf" dump "$out/demo.trace" >"$out/demo.jsonl"
python3 - "$out/demo.jsonl" <<'PY'
import collections, json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
calls = [r for r in records if r["kind"] == "nccl"]
rank_of = {r["pid"]: r["rank"] for r in records if r["kind"] == "process"}
for name, count in collections.Counter(c["name"] for c in calls).most_common():
    print(f"  {name:<26} {count}")
per_rank = collections.Counter(rank_of.get(c["pid"]) for c in calls if c["rank"] is not None)
print("  calls by RANK:", {k: per_rank[k] for k in sorted(k for k in per_rank if k is not None)})
comms = {r["comm_id"]: r["nranks"] for r in records if r["kind"] == "communicator"}
print(f"  communicators: {len(comms)} (sizes {sorted(comms.values())})")
first = next(c for c in calls if c["name"] == "ncclAllReduce")
print("  one call:", json.dumps(first))
PY
echo
echo "== checked against the workload's own log of what it called"
python3 "$root/tests/e2e/compare_ground_truth.py" "$out/demo.jsonl" "$out/ground-truth" --expect-ranks 4
"$root/tcheck-bpf" dump "$out/demo.trace" --format perfetto -o "$out/demo.perfetto.json"
echo
echo "== files"
echo "  $out/demo.trace            the binary trace"
echo "  $out/demo.jsonl            JSON Lines, one object per record"
echo "  $out/demo.perfetto.json    open it in https://ui.perfetto.dev"
echo "  $out/ground-truth/         the workload's own log of every call it made"
