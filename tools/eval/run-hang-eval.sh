#!/bin/bash
# SPDX-License-Identifier: MIT
# The hang and slowdown evaluation as a BENCHMARKS.md section: the table,
# with the command, the machine and the date it was measured on. One JSON
# line per run (faults, reports, verdicts) goes to .output/hang-eval-runs.jsonl.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "## Hang and slowdown detection"
echo
echo "Measured with \`sudo make eval-hangs\` on $(date -u +%Y-%m-%d), $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), kernel $(uname -r)),"
echo "a machine shared with other work (load average $(cut -d' ' -f1 /proc/loadavg) at the start)."
echo "Each run records the test double's workload with one \`--delay RANK:STEP:WHERE:MS\`"
echo "fault (MS 0 is a hang) under \`tcheck-bpf record --events\` (the live detectors),"
echo "then \`tcheck-bpf check --json\` judges the trace; the table is \`check\`'s. The"
echo "workload's own fault file and call logs are the truth. The job and the recorder run"
echo "at nice -15 with their files in /dev/shm, so that the other work on the machine injects"
echo "fewer delays of its own."
echo
echo "How a run is judged. Hang runs: the first hang report must name the stalled rank"
echo "alone and the collective (function and sequence number) its peers issued and it did"
echo "not; \"first call not made\" also needs its \`missed_call\` to be the call the rank"
echo "made at the same place one step earlier in its own log (function, communicator and"
echo "the sequence number after its last there), whichever communicator that is; a later"
echo "report naming another rank or none, or any slowdown, is a false positive."
echo "Slowdown runs: the first slowdown whose step overlaps the delay is the"
echo "true positive; its straggler must be the delayed rank and its collective the first"
echo "one that rank issued on that communicator after the delay; every other report is a"
echo "false positive. Fault-free runs: every report is a false positive."
echo
python3 tools/eval/hang-eval.py --details .output/hang-eval-runs.jsonl "$@"
echo
python3 tools/eval/hang-eval.py --blocking --details .output/hang-eval-runs-blocking.jsonl "$@"
echo
echo "### PyTorch's gloo collectives"
echo
echo "The same faults in a PyTorch job that makes no NCCL call: its collectives are"
echo "ProcessGroupGloo's, traced by \`record --python\`. The workload's own log holds the truth."
echo
python3 tools/eval/gloo-eval.py --details .output/gloo-eval-runs.jsonl "$@"
root=${TORCH2_ROOT:-/var/cache/tcheck-bpf/trixie-torch}
if [ -f "$root/.tcheck-ready" ]; then
	echo
	python3 tools/eval/gloo-eval.py --stack "torch 2.6" \
		--python "tools/stacks/in-root.sh $root --share $PWD --share /tmp -- /usr/bin/python3" \
		--details .output/gloo-eval-runs-torch2.jsonl "$@"
fi
echo
echo "Hang latency is measured from the moment progress stopped, the last call anywhere"
echo "on the stuck communicator, because the detector's limit is itself \`--hang-factor\`"
echo "(2) expected steps of silence, and \`--hang-min-seconds\` (1) at least: \`detected_ns\` is"
echo "that moment plus the limit, so about 15.4 steps of 65 ms (one second) is the least"
echo "possible; the live figure adds the recorder's tick (a tenth of a step). A hang run"
echo "records for 4 s: where the fault came late, the recording ended before the live"
echo "detectors' second of silence had passed, and only \`check\` of the trace reports it."
echo "Slowdown latency runs from the end of the injected delay to the report, which comes"
echo "when the delayed rank reaches its next collective."
echo
echo "Other work on the machine moves these figures from run to run: a rank it deschedules"
echo "for longer than the threshold is a real straggler to the detector, and a false"
echo "positive here. Each run's faults, reports and verdicts are in"
echo "\`.output/hang-eval-runs.jsonl\` (blocking mode: \`.output/hang-eval-runs-blocking.jsonl\`)."
