#!/usr/bin/env bash
# Runs the runtime NUMA test binary inside throw-away QEMU guests that have
# several NUMA nodes (2 and 4 by default), so that the placement checks a
# one-node machine can only skip -- heads on the nodes the allocator names,
# an exchange moving the hot block onto the serving node's pages, the
# serving policy MPOL_BIND|MPOL_F_STATIC_NODES on every node -- really run.
#
# Usage: tools/numa-qemu-test.sh [-n "2 4"] [-m MiB_PER_NODE] [-t TIMEOUT_S] [-b EXTRA]...
#                                [BINARY] [-- ARGS...]
#   BINARY  default: build/debug/tests/heatsink_runtime_numa_test; a POSIX sh
#           script (first line "#!") runs under the guest's busybox sh
#   EXTRA   another program the binary runs, copied to the guest's /bin with
#           its libraries (repeatable)
#   ARGS    passed to the binary in the guest (e.g. --gtest_filter=NumaMultiNode.*)
# The guest's loopback interface is up (for a script that starts processes
# talking over 127.0.0.1).
#
# Needs (Debian 12): qemu-system-x86, busybox-static, cpio, and the Debian
# archive (apt-get download) for the kernel image, cached under
# $QEMU_NUMA_CACHE (default ~/.cache/qemu-numa). Software emulation (TCG):
# about 10-30 s per boot. Every boot is bounded by TIMEOUT_S.
#
# When a requirement is missing it prints "SKIPPED: <reason>" and exits 0.
# Otherwise the exit status is 0 when the binary passed in every guest, 1 when
# it failed in one, 125 when a guest did not report a status.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE_COUNTS="2 4" MIB=512 HUGE=4 TMO=300 EXTRA=()
while getopts "n:m:t:b:" o; do
  case $o in
    n) NODE_COUNTS=$OPTARG ;; m) MIB=$OPTARG ;; t) TMO=$OPTARG ;; b) EXTRA+=("$OPTARG") ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
BIN=$ROOT/build/debug/tests/heatsink_runtime_numa_test
if [[ $# -gt 0 && $1 != -- ]]; then BIN=$1; shift; fi
if [[ ${1:-} == -- ]]; then shift; fi

skip() { echo "SKIPPED: $*"; exit 0; }
[[ -x $BIN ]] || { echo "numa-qemu-test: no test binary at $BIN (build heatsink_runtime_numa_test)" >&2; exit 2; }
for e in "${EXTRA[@]}"; do
  [[ -x $e ]] || { echo "numa-qemu-test: no program at $e" >&2; exit 2; }
done
RUN=/bin/test ELVES=("${EXTRA[@]}")
if [[ $(head -c 2 "$BIN") == '#!' ]]; then RUN="sh /bin/test"; else ELVES+=("$BIN"); fi
for tool in qemu-system-x86_64 cpio timeout gzip ldd; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (apt-get install qemu-system-x86 busybox-static cpio)"
done
BUSYBOX=$(command -v busybox || true)
[[ -n $BUSYBOX ]] || skip "busybox is not installed (apt-get install busybox-static)"

# 1. Kernel: vmlinuz from the current Debian linux-image package, extracted
#    without installing it.
CACHE=${QEMU_NUMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/qemu-numa}
mkdir -p "$CACHE"
VMLINUZ=$(ls "$CACHE"/boot/vmlinuz-* 2>/dev/null | head -1 || true)
if [[ -z $VMLINUZ ]]; then
  KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [[ -n $KPKG ]] || skip "apt-cache knows no linux-image-amd64 package (run apt-get update)"
  if ! (cd "$CACHE" && timeout 300 apt-get download "$KPKG" >/dev/null 2>&1 &&
        dpkg-deb -x "$KPKG"_*.deb kroot && rm -rf boot && mv kroot/boot . && rm -rf kroot "$KPKG"_*.deb); then
    skip "could not fetch the kernel package $KPKG"
  fi
  VMLINUZ=$(ls "$CACHE"/boot/vmlinuz-* | head -1)
fi

# 2. Initramfs: busybox, the binary and its shared libraries; /init runs the
#    binary and reports its status through the isa-debug-exit port.
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
R=$WORK/root
mkdir -p "$R"/{bin,proc,sys,dev,tmp}
cp "$BUSYBOX" "$R/bin/busybox"
for a in sh mount echo cat printf dd poweroff ip sleep kill grep sed tail head wc date; do
  ln -s busybox "$R/bin/$a"
done
cp "$BIN" "$R/bin/test"
for e in "${EXTRA[@]}"; do cp "$e" "$R/bin/"; done
# (A dynamically linked busybox brings its libraries along the same way.)
{ for e in "${ELVES[@]}"; do ldd "$e"; done; ldd "$BUSYBOX" 2>/dev/null || true; } | awk '/=> \//{print $3} /^[ \t]*\/lib/{print $1}' | sort -u | while read -r l; do
  mkdir -p "$R$(dirname "$l")"; cp -L "$l" "$R$l"
done
{
  echo '#!/bin/sh'
  echo 'mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev'
  echo 'export GTEST_COLOR=no PATH=/bin'
  echo 'ip link set lo up 2>/dev/null'
  echo "for n in /sys/devices/system/node/node*; do echo $HUGE > \$n/hugepages/hugepages-2048kB/nr_hugepages; done"
  printf '%s' "$RUN"; for a in "$@"; do printf ' %q' "$a"; done; echo '; rc=$?'
  echo 'echo "GUEST-RC=$rc"'
  echo 'printf "\\$(printf %03o $rc)" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null'
  echo 'poweroff -f'
} > "$R/init"
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$WORK/initrd.gz"

# 3. One boot per node count: NODES nodes of MIB MiB, one vCPU each, distance
#    20 between any two.
boot() {
  local nodes=$1 args=() i j
  for ((i = 0; i < nodes; i++)); do
    args+=(-object "memory-backend-ram,id=m$i,size=${MIB}M" -numa "node,nodeid=$i,cpus=$i,memdev=m$i")
  done
  for ((i = 0; i < nodes; i++)); do for ((j = i + 1; j < nodes; j++)); do
    args+=(-numa "dist,src=$i,dst=$j,val=20")
  done; done
  set +e
  timeout "$TMO" qemu-system-x86_64 -accel tcg,thread=multi -machine pc -cpu max -smp "$nodes" \
    -m $((nodes * MIB))M "${args[@]}" -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
    -kernel "$VMLINUZ" -initrd "$WORK/initrd.gz" -append "console=ttyS0 quiet panic=-1" \
    -nographic -no-reboot -display none -serial stdio -monitor none </dev/null | tr -d '\r'
  local q=${PIPESTATUS[0]}
  set -e
  # isa-debug-exit: qemu exits with (value << 1) | 1.
  if ((q % 2 == 1)); then return $(((q - 1) / 2)); fi
  echo "numa-qemu-test: the $nodes-node guest reported no status (qemu rc=$q; 124 = timeout)" >&2
  return 125
}

status=0
summary=()
for nodes in $NODE_COUNTS; do
  echo "=== numa-qemu-test: $nodes NUMA nodes ==="
  rc=0
  boot "$nodes" || rc=$?
  if ((rc == 0)); then
    summary+=("$nodes nodes: passed")
  else
    summary+=("$nodes nodes: FAILED (rc=$rc)")
    if ((rc == 125)); then status=125; elif ((status == 0)); then status=1; fi
  fi
done
printf 'numa-qemu-test: %s\n' "${summary[@]}"
exit $status
