#!/bin/bash
# SPDX-License-Identifier: MIT
# On a GPU machine: a rank blocked inside the real NCCL's ncclCommInitRank (its
# peer never comes) is kept in the trace as an open call, with its rank, size and
# unique id, when recording stops. Writes under $OUT (default /tmp/gpu-check).
set -u
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/gpu-check}
tcheck=${TCHECK:-./tcheck-bpf}
python=${PYTHON:-python3}
mkdir -p "$out"
nccl_lib=$("$python" -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))')
cc -O2 -Itests/nccl_double -o /tmp/nccl_init_wait tools/gpu/nccl_init_wait.c \
	-L"$nccl_lib" -l:libnccl.so.2 -Wl,-rpath,"$nccl_lib" >"$out/open-call.log" 2>&1 || exit 1
timeout 120 "$tcheck" record -o "$out/init.trace" --duration 8 -- /tmp/nccl_init_wait \
	>>"$out/open-call.log" 2>&1
pkill -9 -f /tmp/nccl_init_wait
"$tcheck" dump --calls-only "$out/init.trace" >"$out/init-calls.jsonl" 2>>"$out/open-call.log"
cat "$out/open-call.log"
"$python" -c 'import json, sys
for line in open(sys.argv[1]):
    c = json.loads(line)
    print(c["name"], "open" if c.get("open") else "returned", "rank", c.get("rank"), "of", c.get("nranks"), "comm_id", c.get("comm_id"), "unique_id", c.get("unique_id_hash"), "dur_ms", round(c["dur_ns"] / 1e6, 1))' "$out/init-calls.jsonl"
