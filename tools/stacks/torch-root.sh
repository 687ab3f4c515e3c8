#!/bin/sh
# Builds (once) and caches a Debian root with its own python3-torch: the
# torch stacks the end-to-end tests and benchmarks run on beside Debian 12's
# torch 1.13 / Python 3.11.
#
#   tools/stacks/torch-root.sh SUITE [ROOT]     # prints ROOT when it is ready
#
# SUITE trixie: torch 2.6 with Python 3.13; ROOT defaults to
#   $TCHECK_TORCH2_ROOT or /var/cache/tcheck-bpf/trixie-torch.
# SUITE sid: torch 2.14 with Python 3.14; ROOT defaults to
#   $TCHECK_TORCH214_ROOT or /var/cache/tcheck-bpf/sid-torch.
# A root already built (marked by ROOT/.tcheck-ready) is reused as it is.
# Takes about 5 minutes and 4 GB the first time; needs root and Debian's mirror.
set -eu
SUITE=${1:-}
case $SUITE in
trixie) ROOT=${2:-${TCHECK_TORCH2_ROOT:-/var/cache/tcheck-bpf/trixie-torch}} ;;
sid) ROOT=${2:-${TCHECK_TORCH214_ROOT:-/var/cache/tcheck-bpf/sid-torch}} ;;
*) echo "usage: torch-root.sh trixie|sid [ROOT]" >&2; exit 2 ;;
esac
MIRROR=${TCHECK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
# sid's Release file can be older than its Valid-Until by this machine's
# clock; apt refuses it unless told not to check.
APT_OPTIONS="-o Acquire::Check-Valid-Until=false"

if [ -f "$ROOT/.tcheck-ready" ]; then
	echo "$ROOT"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "torch-root: building $ROOT needs root (debootstrap, chroot)" >&2
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

echo "torch-root: debootstrap $SUITE into $ROOT (about 1 minute)" >&2
mkdir -p "$ROOT"
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
	debootstrap --variant=minbase "$SUITE" "$ROOT" "$MIRROR" >/dev/null
fi
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
mountpoint -q "$ROOT/dev" || mount --bind /dev "$ROOT/dev"
mountpoint -q "$ROOT/dev/shm" || mount --bind /dev/shm "$ROOT/dev/shm"
echo "torch-root: apt-get install python3-torch inside it (about 4 minutes)" >&2
chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get $APT_OPTIONS update -qq
chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get $APT_OPTIONS \
	install -y -qq --no-install-recommends python3-torch python3-numpy >/dev/null
chroot "$ROOT" apt-get clean
version=$(chroot "$ROOT" python3 -c 'import sys, torch; print(sys.version.split()[0], torch.__version__)')
echo "torch-root: ready: Python and torch $version" >&2
echo "$version" > "$ROOT/.tcheck-ready"
echo "$ROOT"
