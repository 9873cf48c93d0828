#!/usr/bin/env bash
# The README's test command: installs what is missing, builds the debug preset
# (warnings are errors) and runs the whole test suite with ctest.
# Usage: tools/test.sh [PRESET]   (default: debug; also asan, tsan, release)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-debug}
tools/setup.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
ctest --preset "$preset"
