#!/usr/bin/env bash
# The README's test command: installs what is missing, builds the debug preset
# (warnings are errors) and runs the whole test suite with ctest.
# Usage: tools/test.sh [PRESET]   (default: debug; also asan, tsan, release)
# The asan tree also holds the fuzz targets that tools/fuzz.sh runs.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-debug}
tools/setup.sh
# The same compiler launcher as tools/fuzz.sh, so both scripts configure the
# asan tree identically and neither rebuilds the other's objects.
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake --preset "$preset" "${launcher[@]}" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset"
