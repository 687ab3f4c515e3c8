#!/bin/sh
# Builds (once) and caches a Debian trixie root with its own python3-torch
# (torch 2.6, Python 3.13): the second torch stack the end-to-end tests and
# benchmarks run on, beside Debian 12's torch 1.13 / Python 3.11.
#
#   tools/stacks/torch2-root.sh [ROOT]     # prints ROOT when it is ready
#
# ROOT defaults to $TCHECK_TORCH2_ROOT or /var/cache/tcheck-bpf/trixie-torch.
# A root already built (marked by ROOT/.tcheck-ready) is reused as it is.
# Takes about 5 minutes and 4 GB the first time; needs root and Debian's mirror.
set -eu
ROOT=${1:-${TCHECK_TORCH2_ROOT:-/var/cache/tcheck-bpf/trixie-torch}}
MIRROR=${TCHECK_DEBIAN_MIRROR:-http://deb.debian.org/debian}

if [ -f "$ROOT/.tcheck-ready" ]; then
	echo "$ROOT"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "torch2-root: building $ROOT needs root (debootstrap, chroot)" >&2
	exit 1
fi
command -v debootstrap >/dev/null 2>&1 || {
	apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
}

unmount_all() {
	for mount_point in "$ROOT/dev/shm" "$ROOT/dev" "$ROOT/proc"; do
		mountpoint -q "$mount_point" 2>/dev/null && umount -l "$mount_point" || true
	done
}
trap unmount_all EXIT

echo "torch2-root: debootstrap trixie into $ROOT (about 1 minute)" >&2
mkdir -p "$ROOT"
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
	debootstrap --variant=minbase trixie "$ROOT" "$MIRROR" >/dev/null
fi
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
mountpoint -q "$ROOT/dev" || mount --bind /dev "$ROOT/dev"
mountpoint -q "$ROOT/dev/shm" || mount --bind /dev/shm "$ROOT/dev/shm"
echo "torch2-root: apt-get install python3-torch inside it (about 4 minutes)" >&2
chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive \
	apt-get install -y -qq --no-install-recommends python3-torch python3-numpy >/dev/null
chroot "$ROOT" apt-get clean
version=$(chroot "$ROOT" python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__)')
echo "torch2-root: ready: Python and torch $version" >&2
echo "$version" > "$ROOT/.tcheck-ready"
echo "$ROOT"
