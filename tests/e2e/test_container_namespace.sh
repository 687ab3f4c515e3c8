#!/bin/bash
# A process in another mount namespace (a container) whose NCCL lives at a
# path that does not exist on the host: found through /proc/PID/root,
# probed, and traced exactly.
source "$(dirname "$0")/lib.sh"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
jail="$SCRATCH/jail"
mkdir -p "$jail"
cat >"$SCRATCH/inside.sh" <<INSIDE
set -e
# Private to this namespace: the host sees an empty folder.
mount -t tmpfs none "$jail"
mkdir -p "$jail/lib"
cp "$WORKLOAD" "$jail/nccl-workload"
cp "$TEST_BIN/lib/libnccl.so.2" "$jail/lib/libnccl.so.2"
touch "$SCRATCH/ready"
exec "$jail/nccl-workload" --ranks 2 --steps 30 --log-dir "$SCRATCH/log" --wait-file "$SCRATCH/go"
INSIDE
unshare --mount --propagation private bash "$SCRATCH/inside.sh" &
launcher=$!
BACKGROUND_PIDS+=("$launcher")
wait_for_file "$SCRATCH/ready" 10
deadline=$((SECONDS + 10))
until [ "$(pgrep -c -P "$launcher")" -ge 2 ]; do
	[ $SECONDS -lt $deadline ] || fail "the ranks did not start"
	sleep 0.05
done
[ -z "$(ls -A "$jail")" ] || fail "the namespace's files should not be visible on the host"
"$TCHECK" --quiet record -o "$SCRATCH/jail.trace" --pid "$launcher" &
recorder=$!
BACKGROUND_PIDS+=("$recorder")
deadline=$((SECONDS + 10))
until "$TCHECK" dump "$SCRATCH/jail.trace" 2>/dev/null | grep -q '"kind":"library"'; do
	[ $SECONDS -lt $deadline ] || fail "the library inside the namespace was not probed"
	sleep 0.1
done
touch "$SCRATCH/go"
wait "$launcher" || fail "the workload failed"
wait "$recorder" || fail "record failed"
"$TCHECK" dump "$SCRATCH/jail.trace" >"$SCRATCH/jail.jsonl"
grep -q '"kind":"library".*/proc/[0-9]*/root' "$SCRATCH/jail.jsonl" ||
	fail "the library should have been reached through /proc/PID/root"
python3 "$ROOT/tests/e2e/compare_ground_truth.py" "$SCRATCH/jail.jsonl" "$SCRATCH/log" \
	--expect-ranks 2 || fail "the trace differs from the workload's log"
