#!/usr/bin/env bash
# Installs the Debian 12 packages Heatsink builds with. Idempotent: packages
# already present are not touched, and apt-get runs only when one is missing.
# Uses sudo when not root.
# Usage: tools/setup.sh [--numa-guest]
#   --numa-guest  also installs what tools/numa-qemu-test.sh needs (QEMU,
#                 busybox, cpio) to run the NUMA tests in multi-node guests.
set -euo pipefail
PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev libgtest-dev libgmock-dev googletest libbenchmark-dev
  nlohmann-json3-dev libcli11-dev
  libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libnuma-dev libhwloc-dev libucx-dev ucx-utils prometheus-cpp-dev libssl-dev openssl
  clang libclang-rt-14-dev
  etcd-server
)
if [[ ${1:-} == --numa-guest ]]; then
  PACKAGES+=(qemu-system-x86 busybox-static cpio)
elif [[ -n ${1:-} ]]; then
  echo "setup: unknown argument '$1' (usage: tools/setup.sh [--numa-guest])" >&2
  exit 2
fi
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
