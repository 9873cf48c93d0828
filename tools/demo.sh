#!/usr/bin/env bash
# The README's main-job command: installs what is missing, builds the release
# preset's simulator, and runs the demo study (the hot-key fanout scenario
# under dynamic_replication_mode off, observe and enforce), printing the
# side-by-side table and where the report is.
#
# HEATSINK_DEMO_OUT overrides the output directory (default out/demo).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
configure=(cmake --preset release)
# Reuse compiled objects across builds when ccache is installed.
if command -v ccache >/dev/null 2>&1; then
  configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
"${configure[@]}" >/dev/null
cmake --build --preset release -j "$(nproc)" --target heatsink-sim
out=${HEATSINK_DEMO_OUT:-out/demo}
build/release/tools/heatsink-sim compare scenarios/hot-key-fanout.json \
  --modes off,observe,enforce --out "$out"
echo
echo "Open $out/compare.html in a browser for the plots (each mode's own report:"
echo "$out/<mode>/report.html). Replay one run with the command printed for it above."
