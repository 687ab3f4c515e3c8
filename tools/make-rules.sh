#!/bin/bash
# Regenerates the shipped rules (rules/*.json) from the reference workloads:
# the NCCL test double in data-, tensor- and pipeline-parallel layouts, and
# the CPU PyTorch training scripts (single process, and DDP at 2 and 4 ranks). Needs
# root (it records with BPF) and a built tree (make all).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TCHECK="$ROOT/tcheck-bpf"
WORKLOAD="$ROOT/.output/tests/nccl-workload"
PY="$ROOT/tests/workloads/python"
WORK=$(mktemp -d /tmp/tcheck-rules.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

"$TCHECK" --quiet record -o dp.trace -- "$WORKLOAD" --ranks 4 --tp 1 --pp 1 --steps 12 \
	--log-dir dp-log >/dev/null
"$TCHECK" --quiet record -o tp.trace -- "$WORKLOAD" --ranks 8 --tp 4 --pp 1 --steps 12 \
	--log-dir tp-log >/dev/null
"$TCHECK" --quiet record -o tp-pp.trace -- "$WORKLOAD" --ranks 8 --tp 2 --pp 2 --steps 12 \
	--log-dir tp-pp-log >/dev/null
"$TCHECK" --quiet infer -o "$ROOT/rules/nccl-parallel.json" dp.trace tp.trace tp-pp.trace

if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	"$TCHECK" --quiet record -o cpu.trace --python -- /usr/bin/python3 "$PY/train_cpu.py" \
		--steps 8 >/dev/null
	# Two world sizes, so that no rule holds a constant that is the job's size.
	for ranks in 2 4; do
		"$TCHECK" --quiet record -o "ddp-$ranks.trace" --python -- /usr/bin/python3 \
			"$PY/train_ddp.py" --world-size "$ranks" --steps 8 --log-dir "ddp-$ranks-log" \
			>/dev/null
	done
	"$TCHECK" --quiet infer -o "$ROOT/rules/torch-cpu.json" cpu.trace
	"$TCHECK" --quiet infer -o "$ROOT/rules/torch-ddp.json" ddp-2.trace ddp-4.trace
else
	echo "make-rules: Debian's python3-torch is not installed: torch rules left as they are" >&2
fi
for rules in "$ROOT"/rules/*.json; do
	echo "$(basename "$rules"): $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["rules"]))' "$rules") rules"
done
