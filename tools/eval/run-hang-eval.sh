#!/bin/bash
# SPDX-License-Identifier: MIT
# The hang and slowdown evaluation as a BENCHMARKS.md section: the table,
# with the command, the machine and the date it was measured on.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "## Hang and slowdown detection"
echo
echo "Measured with \`sudo make eval-hangs\` on $(date -u +%Y-%m-%d), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r))."
echo "Each run records the test double's workload with one \`--delay RANK:STEP:WHERE:MS\`"
echo "fault (MS 0 is a hang) and \`tcheck-bpf check --json\` judges the trace; the"
echo "workload's own fault file and call logs are the truth."
echo
python3 tools/eval/hang-eval.py "$@"
