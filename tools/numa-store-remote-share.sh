#!/bin/sh
# Measures a head-pool store's remote share -- the fraction of the head bytes
# it serves that it reads from memory on a node other than its serving node --
# before and after promotion settles, inside a 2-node QEMU guest
# (tools/numa-qemu-test.sh), with the real processes on loopback:
#
#   heatsink-master
#   heatsink-store --memory 8M --sub-memory 8M --segments 2 --serving-node 0
#                  --head-pool-report-s 2 (segment 257 is the serving node's
#                  region, segment 258 the foreign one on node 1)
#   heatsink-load --mode zipf: 56 keys of 256 KiB (14 MiB of the 16 MiB pool)
#                  written coldest first into segments 257,258, so the 32
#                  coldest fill local memory and the 24 hottest land in
#                  foreign memory; then 2 readers with Zipf exponent 1.2 for
#                  LOAD_S seconds (default 45).
#
# The store's promotion waits no_inversion_wait_ms=30000 after a scan without
# inversion (the ADR's 1 s elsewhere): its first scan, at start, finds
# nothing to do, and the next comes 30 s later, so the reads served until
# then (the puts take about 15 s under emulation) come from the placement
# static admission left; once an inversion exists it exchanges back to back
# as always, and the rest of the run shows the settled placement.
# The store prints, every 2 s and at exit, the remote share in the last
# interval, before its first exchange and since its last, and checks every
# block's pages with move_pages.
#
# Usage (host): tools/numa-store-remote-share.sh [BUILD_DIR]   (default build/debug)
#   LOAD_S (seconds of reads) is 45 by default. Needs what tools/numa-qemu-test.sh
#   needs; prints "SKIPPED: ..." and exits 0 without it. Exit status 0 when the store
#   exchanged blocks, every page was on its node, and its remote share since
#   the last exchange is below the share before the first one.
# In the guest the script runs again as /bin/test --in-guest (POSIX sh, busybox).
set -eu

if [ "${1:-}" != --in-guest ]; then
  ROOT=$(cd "$(dirname "$0")/.." && pwd)
  BUILD=${1:-$ROOT/build/debug}
  for b in heatsink-master heatsink-store heatsink-load; do
    if [ ! -x "$BUILD/tools/$b" ]; then
      echo "numa-store-remote-share: no $BUILD/tools/$b (cmake --build $BUILD --target $b)" >&2
      exit 2
    fi
  done
  exec "$ROOT/tools/numa-qemu-test.sh" -n 2 -t 900 \
    -b "$BUILD/tools/heatsink-master" -b "$BUILD/tools/heatsink-store" \
    -b "$BUILD/tools/heatsink-load" "$0" -- --in-guest "${LOAD_S:-45}"
fi

LOAD_S=${2:-45}
cd /tmp
MASTER=127.0.0.1:50051
heatsink-master --listen "$MASTER" > master.log 2>&1 &
master=$!
sleep 3
heatsink-store --master "$MASTER" --client-id 1 --memory 8M --sub-memory 8M --segments 2 \
  --serving-node 0 --head-pool-report-s 2 --no-data-service --endpoint-file store.endpoint \
  --set no_inversion_wait_ms=30000 > store.log 2>&1 &
store=$!
waited=0
while [ ! -s store.endpoint ] && [ $waited -lt 120 ]; do sleep 1; waited=$((waited + 1)); done
load_rc=0
heatsink-load --master "$MASTER" --mode zipf --keys 56 --value-bytes 262144 --zipf-s 1.2 \
  --write-segments 257,258 --threads 2 --duration-ms $((LOAD_S * 1000)) > load.log 2>&1 ||
  load_rc=$?
kill -TERM $store
store_rc=0
wait $store || store_rc=$?
kill -TERM $master
wait $master || true

echo "--- heatsink-load (rc=$load_rc)"
cat load.log
echo "--- heatsink-store (rc=$store_rc)"
cat store.log
last=$(grep 'head pool remote share' store.log | tail -1)
echo "--- result"
echo "$last"
# "...; B% of X MiB before the first exchange, A% of Y MiB since the last (N exchanges); P"
before=$(echo "$last" | sed -n 's/.*; \([0-9.]*\)% of [0-9.]* MiB before the first exchange.*/\1/p')
after=$(echo "$last" | sed -n 's/.*exchange, \([0-9.]*\)% of [0-9.]* MiB since the last.*/\1/p')
exchanges=$(echo "$last" | sed -n 's/.*since the last (\([0-9]*\) exchanges).*/\1/p')
echo "remote share before the first exchange: ${before:-?}%, since the last: ${after:-?}%" \
  "(${exchanges:-?} exchanges)"
[ $load_rc -eq 0 ] && [ $store_rc -eq 0 ] || exit 1
echo "$last" | grep -q 'every page on its block' || exit 1
[ -n "$before" ] && [ -n "$after" ] && [ "${exchanges:-0}" -gt 0 ] || exit 1
# after < before, compared as numbers with two decimals
[ "$(echo "$after" | sed 's/\.//')" -lt "$(echo "$before" | sed 's/\.//')" ] || exit 1
