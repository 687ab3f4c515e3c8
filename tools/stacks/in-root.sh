#!/bin/sh
# Runs a command chrooted into a torch 2.x root (tools/stacks/torch-root.sh)
# the way a job in a chroot runs: same mount namespace as the host, so its
# /proc/PID/maps names its files by their host paths. The paths a test needs
# (the checkout, scratch folders under /tmp) are bind-mounted at the same
# place inside, so a command line reads the same inside and out.
#
#   tools/stacks/in-root.sh ROOT [--share PATH]... -- COMMAND [ARGS...]
set -eu
ROOT=$1
shift
shares=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
	case $1 in
	--share) shares="$shares $2"; shift 2 ;;
	*) echo "in-root: unknown option $1" >&2; exit 2 ;;
	esac
done
[ "${1:-}" = "--" ] && shift
[ -f "$ROOT/.tcheck-ready" ] || { echo "in-root: $ROOT is not a built root (tools/stacks/torch-root.sh)" >&2; exit 2; }
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
mountpoint -q "$ROOT/dev" || mount --bind /dev "$ROOT/dev"
mountpoint -q "$ROOT/dev/shm" || mount --bind /dev/shm "$ROOT/dev/shm"
# A share bound by an earlier run may hold a folder since deleted and made
# anew at the same path (a fresh checkout where the root is cached): bind it
# again unless it is the very folder the host has there now.
same_folder() { [ "$(stat -c %d:%i "$1")" = "$(stat -c %d:%i "$2")" ]; }
for path in $shares; do
	mkdir -p "$ROOT$path"
	if mountpoint -q "$ROOT$path" && ! same_folder "$path" "$ROOT$path"; then
		umount -l "$ROOT$path"
	fi
	mountpoint -q "$ROOT$path" || mount --bind "$path" "$ROOT$path"
done
exec chroot "$ROOT" "$@"
