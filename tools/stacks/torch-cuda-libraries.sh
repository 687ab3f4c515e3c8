#!/bin/sh
# Fetches (once) and caches the libraries of Debian trixie's CUDA build of
# torch 2.6 (package libtorch-cuda-2.6, from contrib): libtorch_cpu.so and
# libtorch_cuda.so, where ProcessGroupNCCL lives. Nothing runs them here (no
# GPU, none of their CUDA dependencies): the probe-site tests read them to
# check where NCCL's c10d collectives are probed.
#
#   tools/stacks/torch-cuda-libraries.sh [DIR]    # prints DIR when ready
#
# DIR defaults to $TCHECK_TORCH_CUDA_LIBRARIES or
# /var/cache/tcheck-bpf/torch-cuda-2.6. A download of about 480 MB and
# 1.4 GB on disk the first time; needs Debian's mirror.
set -eu
DIR=${1:-${TCHECK_TORCH_CUDA_LIBRARIES:-/var/cache/tcheck-bpf/torch-cuda-2.6}}
MIRROR=${TCHECK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGE=libtorch-cuda-2.6

if [ -f "$DIR/.tcheck-ready" ]; then
	echo "$DIR"
	exit 0
fi
mkdir -p "$DIR"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "torch-cuda-libraries: reading trixie contrib's package index" >&2
curl -fsS "$MIRROR/dists/trixie/contrib/binary-amd64/Packages.xz" -o "$work/Packages.xz"
file=$(xz -dc "$work/Packages.xz" |
	awk -v package="$PACKAGE" '$1 == "Package:" { take = ($2 == package) }
		take && $1 == "Filename:" { print $2; exit }')
if [ -z "$file" ]; then
	echo "torch-cuda-libraries: $PACKAGE is not in trixie contrib at $MIRROR" >&2
	exit 1
fi
echo "torch-cuda-libraries: fetching $file (about 480 MB)" >&2
curl -fsS "$MIRROR/$file" -o "$work/package.deb"
dpkg-deb --fsys-tarfile "$work/package.deb" |
	tar -x -C "$work" --wildcards './usr/lib/x86_64-linux-gnu/libtorch_c*.so.*.*.*'
mv "$work"/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.* "$work"/usr/lib/x86_64-linux-gnu/libtorch_cuda.so.* "$DIR/"
basename "$file" > "$DIR/.tcheck-ready"
echo "torch-cuda-libraries: ready: $(ls "$DIR" | tr '\n' ' ')" >&2
echo "$DIR"
