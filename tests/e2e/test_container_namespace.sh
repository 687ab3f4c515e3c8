#!/bin/bash
# Processes whose files the host cannot name as they do, traced exactly (the
# workload's own log is the truth) after record --pid attaches to them:
# - namespace: another mount namespace (a container) whose NCCL lives at a
#   path that does not exist on the host (reached through /proc/PID/root);
# - chroot: a chrooted job whose mounts are the host's, whose maps name its
#   files by their host paths (not under /proc/PID/root);
# - both: a chroot inside a private mount namespace, whose files neither path
#   reaches (the kernel's /proc/PID/map_files handles do).
source "$(dirname "$0")/lib.sh"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
command -v chroot >/dev/null || skip "chroot (coreutils) is not installed"

# fill_jail DIR: the workload, its NCCL and the C libraries it needs.
fill_jail() {
	local jail=$1 library
	mkdir -p "$jail/lib" "$jail/shared"
	cp "$WORKLOAD" "$jail/nccl-workload"
	cp "$TEST_BIN/lib/libnccl.so.2" "$jail/lib/libnccl.so.2"
	for library in $(ldd "$WORKLOAD" | grep -o '/[^ ]*' | grep -v "$TEST_BIN"); do
		mkdir -p "$jail$(dirname "$library")"
		cp "$library" "$jail$library"
	done
}

# start_in_jail JAIL SHARED: the lines that give the jail /proc and /dev/shm
# (the ranks need both), say it is ready, and run the job chrooted in it.
start_in_jail() {
	cat <<-LINES
		mkdir -p "$1/proc" "$1/dev/shm"
		mount -t proc proc "$1/proc"
		mount -t tmpfs none "$1/dev/shm"
		touch "$2/ready"
		exec chroot "$1" /nccl-workload --ranks 2 --steps 30 --log-dir /shared/log --wait-file /shared/go
	LINES
}

# run_case NAME: starts the case's workload, records it by pid, compares.
run_case() {
	local name=$1 jail="$SCRATCH/$1/jail" shared="$SCRATCH/$1/shared" launcher recorder deadline
	mkdir -p "$jail" "$shared/log"
	case $name in
	namespace)
		cat >"$SCRATCH/$name.sh" <<-INSIDE
			set -e
			# Private to this namespace: the host sees an empty folder.
			mount -t tmpfs none "$jail"
			mkdir -p "$jail/lib"
			cp "$WORKLOAD" "$jail/nccl-workload"
			cp "$TEST_BIN/lib/libnccl.so.2" "$jail/lib/libnccl.so.2"
			touch "$shared/ready"
			exec "$jail/nccl-workload" --ranks 2 --steps 30 --log-dir "$shared/log" --wait-file "$shared/go"
		INSIDE
		unshare --mount --propagation private bash "$SCRATCH/$name.sh" & ;;
	chroot)
		# The ranks need /proc and /dev/shm in the jail: its mount is made in a copy of the
		# host's namespace (same paths), so that it goes away with the job.
		fill_jail "$jail"
		mkdir -p "$jail/shared/log"
		shared="$jail/shared"
		cat >"$SCRATCH/$name.sh" <<-INSIDE
			set -e
			$(start_in_jail "$jail" "$shared")
		INSIDE
		unshare --mount --propagation private bash "$SCRATCH/$name.sh" & ;;
	both)
		cat >"$SCRATCH/$name.sh" <<-INSIDE
			set -e
			mount -t tmpfs none "$jail"
			$(declare -f fill_jail)
			WORKLOAD="$WORKLOAD" TEST_BIN="$TEST_BIN" fill_jail "$jail"
			mount --bind "$shared" "$jail/shared"
			$(start_in_jail "$jail" "$shared")
		INSIDE
		unshare --mount --propagation private bash "$SCRATCH/$name.sh" & ;;
	esac
	launcher=$!
	BACKGROUND_PIDS+=("$launcher")
	wait_for_file "$shared/ready" 10
	deadline=$((SECONDS + 10))
	until [ "$(pgrep -c -P "$launcher")" -ge 2 ]; do
		[ $SECONDS -lt $deadline ] || fail "$name: the ranks did not start"
		sleep 0.05
	done
	if [ "$name" != chroot ]; then
		[ -z "$(ls -A "$jail")" ] || fail "$name: the namespace's files should not be visible on the host"
	fi
	"$TCHECK" --quiet record -o "$SCRATCH/$name.trace" --pid "$launcher" &
	recorder=$!
	BACKGROUND_PIDS+=("$recorder")
	deadline=$((SECONDS + 10))
	until grep -q '"kind":"library"' <<<"$("$TCHECK" dump "$SCRATCH/$name.trace" 2>/dev/null)"; do
		[ $SECONDS -lt $deadline ] || fail "$name: the library of the jailed job was not probed"
		sleep 0.1
	done
	touch "$shared/go"
	wait "$launcher" || fail "$name: the workload failed"
	wait "$recorder" || fail "$name: record failed"
	"$TCHECK" dump "$SCRATCH/$name.trace" >"$SCRATCH/$name.jsonl"
	python3 "$ROOT/tests/e2e/compare_ground_truth.py" "$SCRATCH/$name.jsonl" "$shared/log" \
		--expect-ranks 2 || fail "$name: the trace differs from the workload's log"
	echo "$name: every call of both ranks traced"
}

run_case namespace
grep -q '"kind":"library".*/proc/[0-9]*/root' "$SCRATCH/namespace.jsonl" ||
	fail "namespace: the library should have been reached through /proc/PID/root"
run_case chroot
grep -q "\"kind\":\"library\".*\"$SCRATCH/chroot/jail/lib/libnccl.so.2\"" "$SCRATCH/chroot.jsonl" ||
	fail "chroot: the library should have been reached by its host path: $(grep '"kind":"library"' "$SCRATCH/chroot.jsonl")"
run_case both
grep -q '"kind":"library".*/proc/[0-9]*/map_files/' "$SCRATCH/both.jsonl" ||
	fail "both: the library should have been reached through /proc/PID/map_files: $(grep '"kind":"library"' "$SCRATCH/both.jsonl")"
