#!/usr/bin/env bash
# Builds the libFuzzer targets (build preset `fuzz` in the `asan` tree: clang,
# ASan+UBSan, build/asan)
# and runs each for SECONDS_PER_TARGET seconds starting from its seed corpus
# in fuzz/corpus/<target>/. Fails when any target finds a crash, a sanitizer
# report, a failed check, a timeout or an out-of-memory; the reproducer is
# written to build/asan/fuzz-artifacts/ and the replay command is printed.
#
# Usage: tools/fuzz.sh [SECONDS_PER_TARGET]   (default 30; CI uses a few
#        seconds, a long run e.g. 3600)
# Environment: HEATSINK_FUZZ_TARGETS="trace master" runs only those targets.
# New inputs found during a run go to build/asan/fuzz-corpus/<target>/ (kept
# between runs); fuzz/corpus/ is never written.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || ((seconds < 1)); then
  echo "usage: tools/fuzz.sh [SECONDS_PER_TARGET]" >&2
  exit 2
fi
tools/setup.sh
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake --preset asan "${launcher[@]}" >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

bin_dir=build/asan/fuzz
targets=${HEATSINK_FUZZ_TARGETS:-$(cd fuzz/corpus && ls -d */ | tr -d /)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tools/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p build/asan/fuzz-artifacts
failed=()
for t in $targets; do
  bin="$bin_dir/heatsink_fuzz_$t"
  if [[ ! -x "$bin" ]]; then
    echo "fuzz: no target $bin" >&2
    exit 2
  fi
  work="build/asan/fuzz-corpus/$t"
  mkdir -p "$work"
  rm -f build/asan/fuzz-artifacts/"$t"-*
  echo "== fuzz $t for ${seconds}s"
  # The first directory receives new inputs; the seeds are only read.
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -print_final_stats=1 -artifact_prefix="build/asan/fuzz-artifacts/$t-" \
      "$work" "fuzz/corpus/$t" >"build/asan/fuzz-artifacts/$t.log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units)' "build/asan/fuzz-artifacts/$t.log" || true
  else
    tail -n 60 "build/asan/fuzz-artifacts/$t.log"
    echo "fuzz: $t FAILED; log build/asan/fuzz-artifacts/$t.log; replay with:"
    for a in build/asan/fuzz-artifacts/"$t"-*; do
      [[ -f "$a" ]] && echo "  $bin $a"
    done
    failed+=("$t")
  fi
done
if ((${#failed[@]} > 0)); then
  echo "fuzz: failing targets: ${failed[*]}"
  exit 1
fi
echo "fuzz: all targets ran ${seconds}s without a failure"
