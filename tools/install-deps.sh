#!/bin/sh
# Installs the Debian packages tcheck-bpf needs to build, run and be tested.
set -eu
export DEBIAN_FRONTEND=noninteractive
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
	make gcc clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev \
	libjansson-dev libcunit1-dev libibverbs-dev pkg-config python3 python3-torch \
	clang-format clang-tidy cppcheck procps util-linux yamllint python3-yaml \
	prometheus >/dev/null
