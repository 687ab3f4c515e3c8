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
"$root/tcheck-bpf" dump "$out/demo.trace" --calls-only >"$out/demo.jsonl"
python3 - "$out/demo.jsonl" <<'PY'
import collections, json, sys
calls = [json.loads(line) for line in open(sys.argv[1])]
by_name = collections.Counter(c["name"] for c in calls)
for name, count in by_name.most_common():
    print(f"  {name:<26} {count}")
ranks = collections.Counter(c["rank"] for c in calls if c["name"] == "ncclAllReduce")
print("  all-reduces by rank:", dict(sorted((str(k), v) for k, v in ranks.items())))
first = next(c for c in calls if c["name"] == "ncclAllReduce")
print("  one call:", json.dumps(first)[:300])
PY
"$root/tcheck-bpf" dump "$out/demo.trace" --format perfetto -o "$out/demo.perfetto.json"
echo
echo "== files"
echo "  $out/demo.trace            the binary trace"
echo "  $out/demo.jsonl            JSON Lines, one object per call"
echo "  $out/demo.perfetto.json    open it in https://ui.perfetto.dev"
echo "  $out/ground-truth/         the workload's own log of every call it made"
