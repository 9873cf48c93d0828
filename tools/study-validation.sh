#!/usr/bin/env bash
# Reruns the validation study (docs/studies/validation.md): every shipped
# scenario is checked with `heatsink-replay --plan-only` (the refused ones are
# listed with the reason), each runnable one is replayed against a real
# loopback cluster and compared with its simulation by `heatsink-sim
# validate`; prints one Markdown table row per scenario on stdout.
#
#   tools/study-validation.sh [--build DIR] [--out DIR] [--time-scale X]
#                             [--no-calibration] [SCENARIO[@X]...]
#
#   --build DIR      build tree with tools/heatsink-replay and tools/heatsink-sim
#                    (default: build/release)
#   --out DIR        outputs, one directory per scenario (default: out/study-validation)
#   --time-scale X   passed to heatsink-replay (default 1)
#   --no-calibration compare read latency with the scenarios' own network;
#                    by default `heatsink-replay calibrate` measures this
#                    machine first (OUT/calibration.json) and every
#                    validation simulates with it
#   SCENARIO[@X]     a scenario, with its own time scale after an @
#                    (default: --time-scale). Default list:
#                    scenarios/*.json scenarios/admission/*.json
#                    tests/replay/replay-small.json tests/replay/replay-faults.json,
#                    with the heavy ones slowed so this 2-core machine keeps
#                    up in real time: cold-start-warmup@4, eviction-recreate@2,
#                    hot-key-fanout@8 (about 22 minutes in all). The study/
#                    scenarios (610 s each, 16 stores) are left out: name
#                    them to run them.
#
# Columns: accepted admissions (sim / runtime / both), Jaccard, admission lag
# (median, p90, ms, runtime minus sim), relative errors of cross-domain bytes,
# total bytes, copies and peak extra memory, the largest host-share error,
# p50 read latency (sim / runtime, ms) and its relative error.
# Exit codes: 0 done, 2 a bad argument or a replay that failed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release
out=out/study-validation
scale=1
calibrate=1
scenarios=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --time-scale) scale="$2"; shift 2 ;;
    --no-calibration) calibrate=0; shift ;;
    -*) echo "study-validation.sh: unknown flag $1" >&2; exit 2 ;;
    *) scenarios+=("$1"); shift ;;
  esac
done
if [[ ${#scenarios[@]} -eq 0 ]]; then
  scenarios=(scenarios/*.json scenarios/admission/*.json
             tests/replay/replay-small.json tests/replay/replay-faults.json)
  for i in "${!scenarios[@]}"; do
    case "${scenarios[$i]}" in
      */cold-start-warmup.json) scenarios[$i]+="@4" ;;
      */eviction-recreate.json) scenarios[$i]+="@2" ;;
      */hot-key-fanout.json) scenarios[$i]+="@8" ;;
    esac
  done
fi
replay="$build/tools/heatsink-replay"
sim="$build/tools/heatsink-sim"
mkdir -p "$out"
calibration=()
if [[ $calibrate -eq 1 ]]; then
  "$replay" calibrate --out "$out/calibration.json" >&2
  calibration=(--calibration "$out/calibration.json")
fi
echo "| scenario | accepted sim/rt/both | Jaccard | lag median / p90 ms | cross-domain bytes err | total bytes err | copies err | extra peak err | host share err max | p50 ms sim / rt | p50 err |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
refused=()
for entry in "${scenarios[@]}"; do
  s="${entry%@*}"
  x="$scale"
  [[ "$entry" == *@* ]] && x="${entry##*@}"
  name=$(basename "$s" .json)
  if ! plan=$("$replay" "$s" --out "$out/$name" --time-scale "$x" --plan-only 2>&1); then
    refused+=("$name: ${plan#heatsink-replay: refused: }")
    continue
  fi
  rm -rf "${out:?}/$name"
  if ! "$replay" "$s" --out "$out/$name" --time-scale "$x" --progress-interval-ms 0 \
      > "$out/$name.replay.log" 2>&1; then
    echo "study-validation.sh: replay of $s failed, see $out/$name.replay.log" >&2
    exit 2
  fi
  "$sim" validate "$s" --runtime "$out/$name" --out "$out/$name/validate.json" \
      "${calibration[@]}" > "$out/$name/validate.txt"
  python3 - "$name" "$out/$name/validate.json" "$x" <<'PY'
import json, sys
name, path, scale = sys.argv[1], sys.argv[2], sys.argv[3]
v = json.load(open(path))
m = {r["metric"]: r for r in v["metrics"]}
def err(k):
    r = m.get(k)
    if r is None: return "-"
    e = r["relative_error"]
    return "n/a" if e is None else f"{e:.3f}"
a = v["admissions"]; lag = v["admission_lag_ns"]
p50 = m.get("reads.latency_ns.p50 (calibrated)") or m["reads.latency_ns.p50 (uncalibrated)"]
hs = v["host_share_error_max"]
p50_err = "n/a" if p50["relative_error"] is None else f"{p50['relative_error']:.3f}"
print(f"| {name}{'' if scale == '1' else f' (x{scale})'} | {a['sim_accepted']}/{a['runtime_accepted']}/{a['common']} | {a['jaccard']:.3f} | "
      f"{lag['median']/1e6:.1f} / {lag['p90']/1e6:.1f} | {err('bytes_read.cross_domain')} | "
      f"{err('bytes_read.total')} | {err('copies.completed')} | {err('extra_memory_bytes.peak')} | "
      f"{'n/a' if hs is None else f'{hs:.3f}'} | {p50['sim']/1e6:.2f} / {p50['runtime']/1e6:.2f} | "
      f"{p50_err} |")
PY
done
echo
echo "Refused:"
for r in "${refused[@]}"; do echo "- $r"; done
