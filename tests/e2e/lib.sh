# Shared set-up for the end-to-end tests: paths, a scratch folder that is
# removed on exit, and helpers to fail with a reason.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TCHECK="$ROOT/tcheck-bpf"
TEST_BIN="$ROOT/.output/tests"
WORKLOAD="$TEST_BIN/nccl-workload"
REAL_NCCL=/usr/local/cuda/lib/libnccl.so.2
SCRATCH=$(mktemp -d /tmp/tcheck-e2e.XXXXXX)
BACKGROUND_PIDS=()

cleanup() {
	for pid in "${BACKGROUND_PIDS[@]}"; do
		kill -9 "$pid" 2>/dev/null || true
	done
	rm -rf "$SCRATCH"
}
trap cleanup EXIT

fail() {
	echo "FAILED: $*" >&2
	exit 1
}

skip() {
	echo "$*"
	exit 77
}

# Waits up to $2 seconds for a file to exist.
wait_for_file() {
	local deadline=$((SECONDS + $2))
	while [ ! -e "$1" ]; do
		[ $SECONDS -lt $deadline ] || fail "timed out waiting for $1"
		sleep 0.05
	done
}
