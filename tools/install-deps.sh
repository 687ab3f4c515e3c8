#!/bin/sh
# Installs the Debian packages tcheck-bpf needs to build, run and be tested.
set -eu
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
# README's commands run `sudo make ...`: as root on a fresh machine without
# sudo, install it so they work as written.
if [ -z "$SUDO" ] && ! command -v sudo >/dev/null 2>&1; then
	apt-get install -y -qq --no-install-recommends sudo >/dev/null
fi
$SUDO apt-get install -y -qq --no-install-recommends \
	make gcc binutils clang libclang-rt-dev llvm libbpf-dev bpftool libelf-dev libdw-dev libcapstone-dev zlib1g-dev libzstd-dev \
	libjansson-dev libcunit1-dev libmicrohttpd-dev libcurl4-openssl-dev libibverbs-dev iproute2 curl \
	pkg-config python3 python3-torch xz-utils \
	clang-format clang-tidy cppcheck procps util-linux yamllint python3-yaml \
	prometheus man-db mandoc zsh >/dev/null
# Grafana's dashboard schema (@grafana/schema) and the TypeScript compiler
# that checks the shipped dashboard against it, at the versions
# tests/deploy/grafana-schema/package-lock.json pins (tests/e2e/test_grafana_dashboard.sh).
if ! command -v npm >/dev/null 2>&1; then
	$SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
npm ci --prefix "$(dirname "$0")/../tests/deploy/grafana-schema" --no-audit --no-fund >/dev/null
# The Python benchmark's peer: bcc's USDT tools, and kernel headers it can
# compile against when the running kernel has none of its own.
$SUDO apt-get install -y -qq --no-install-recommends bpfcc-tools linux-headers-amd64 >/dev/null
# The other torch stacks the tests run on, each in a Debian root of its own
# (about 5 minutes and 4 GB each, once; cached after that): torch 2.6 with
# Python 3.13 (trixie) and torch 2.14 with Python 3.14 (sid).
# TCHECK_SKIP_TORCH2_ROOT=1 leaves both out (their tests then skip).
if [ "${TCHECK_SKIP_TORCH2_ROOT:-0}" != 1 ]; then
	$SUDO "$(dirname "$0")/stacks/torch-root.sh" trixie >/dev/null
	$SUDO "$(dirname "$0")/stacks/torch-root.sh" sid >/dev/null
fi
# The CUDA build of the same torch, only read (no GPU here): where
# ProcessGroupNCCL's collectives are probed (about 30 s and 1.4 GB once).
if [ "${TCHECK_SKIP_TORCH_CUDA_LIBRARIES:-0}" != 1 ]; then
	$SUDO "$(dirname "$0")/stacks/torch-cuda-libraries.sh" >/dev/null
fi
