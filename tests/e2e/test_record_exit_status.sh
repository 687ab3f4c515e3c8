#!/bin/bash
# record -- COMMAND passes the command's exit status through, and a failing
# rank (a numerically checked workload) is not hidden by the tracer.
source "$(dirname "$0")/lib.sh"
set +e
"$TCHECK" --quiet record -o "$SCRATCH/false.trace" -- sh -c 'exit 3'
status=$?
set -e
[ "$status" -eq 3 ] || fail "record returned $status for a command that exited 3"
"$TCHECK" dump "$SCRATCH/false.trace" >/dev/null || fail "a trace with no calls must still read"
