#!/usr/bin/env bash
# Reruns the cross-domain study (docs/studies/cross-domain.md): the public
# conversation trace and the three generated traces, each under three
# settings, and prints the study's table (Markdown) on stdout.
#
#   tools/study-cross-domain.sh [--sim PATH] [--out DIR]
#
# Settings (every run is domain-aware, same seed, same scenario otherwise):
#   off    dynamic_replication_mode=off
#   rfc    enforce with the RFC's defaults: threshold 0.8 reads/s in a 10 s
#          window, cap 2, no cold release
#   best   enforce, the setting the study found (estimate --sweep for the
#          admission knobs, then enforce runs for the release): a 60 s window
#          with a hit count of 2 (threshold 0.033 reads/s), one replica per
#          domain (cap 1), the cold release on after 1 ms, recreate cooldown
#          1 ms
#   wide   agentic only: the same with a 120 s window (hit count 2), which
#          reaches the online line's neighbourhood at a memory cost
#   tight  agentic only: the same with a 20 s window (hit count 2), which
#          holds about 10% of the stored bytes
#
#   --sim PATH  the heatsink-sim binary (default: $HEATSINK_SIM, else
#               build/release/tools/heatsink-sim, else build/debug/...)
#   --out DIR   where each run's outputs go (default: out/study-cross-domain)
#
# Columns: avoidable removed (of the run's own avoidable bytes), of the online
# line, of the clairvoyant line (each scenario sets the clairvoyant budget to
# 10% of the off run's stored bytes), extra memory (time-averaged, as a
# fraction of the stored bytes), p99 read latency, copies. Definitions:
# docs/outputs.md (Limit lines). Exit codes: 0 done, 2 a run failed or a bad
# argument.
set -u -o pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
sim="${HEATSINK_SIM:-}"
out="out/study-cross-domain"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sim) sim="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "study-cross-domain: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [[ -z "$sim" ]]; then
  for c in "$root/build/release/tools/heatsink-sim" "$root/build/debug/tools/heatsink-sim"; do
    if [[ -x "$c" ]]; then sim="$c"; break; fi
  done
fi
if [[ -z "$sim" || ! -x "$sim" ]]; then
  echo "study-cross-domain: no heatsink-sim binary (build one or pass --sim)" >&2
  exit 2
fi

best=(--set dynamic_replication_mode=enforce
      --set dynamic_replication_heat_window_seconds=60
      --set dynamic_replication_admission_qps_threshold=0.033
      --set dynamic_replication_max_memory_replicas=1
      --set dynamic_replication_release_enabled=true
      --set dynamic_replication_release_after_ms=1
      --set dynamic_replication_recreate_cooldown_ms=1)
wide=("${best[@]}" --set dynamic_replication_heat_window_seconds=120
      --set dynamic_replication_admission_qps_threshold=0.0166)
tight=("${best[@]}" --set dynamic_replication_heat_window_seconds=20
       --set dynamic_replication_admission_qps_threshold=0.1)

# One run; prints a table row.
row() {
  local trace="$1" setting="$2" scenario="$3"
  shift 3
  local dir="$out/$trace-$setting"
  local text
  if ! text="$("$sim" run "$root/$scenario" --out "$dir" "$@" 2>&1)"; then
    echo "study-cross-domain: $trace $setting failed:" >&2
    echo "$text" | tail -5 >&2
    exit 2
  fi
  echo "$text" | awk -v trace="$trace" -v setting="$setting" '
    /^reads /      { for (i = 1; i <= NF; ++i) if ($i == "p99") p99 = $(i + 1) }
    /^copies /     { copies = $2 }
    /^extra mem /  { for (i = 1; i <= NF; ++i) if ($i == "of" && $(i + 1) == "the" && $(i + 2) == "stored") mem = substr($(i - 1), 2) }
    /^cross-dom /  { removed = $NF }
    /^limits /     { n = 0; for (i = 1; i <= NF; ++i) if ($i == "(run:") { v[++n] = $(i + 1) } online = v[1]; clair = v[2]; sub(/\)$/, "", clair) }
    END { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", trace, setting, removed, online, clair, mem, p99, copies }'
}

mkdir -p "$out"
echo "| trace | setting | avoidable removed | of online line | of clairvoyant line | extra memory / stored | p99 read latency (ms) | copies |"
echo "|---|---|---|---|---|---|---|---|"
for entry in conversation:scenarios/pd-conversation-replay.json agentic:scenarios/study/agentic.json \
             hot-shift:scenarios/study/hot-shift.json one-shot-flood:scenarios/study/one-shot-flood.json; do
  trace="${entry%%:*}"
  scenario="${entry#*:}"
  row "$trace" off "$scenario" --set dynamic_replication_mode=off
  row "$trace" rfc "$scenario" --set dynamic_replication_mode=enforce \
      --set dynamic_replication_admission_qps_threshold=0.8
  row "$trace" best "$scenario" "${best[@]}"
  if [[ "$trace" == agentic ]]; then
    row "$trace" wide "$scenario" "${wide[@]}"
    row "$trace" tight "$scenario" "${tight[@]}"
  fi
done
