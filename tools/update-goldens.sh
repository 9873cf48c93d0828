#!/usr/bin/env bash
# Regenerates the golden decision logs of the scenarios on purpose.
#
#   tools/update-goldens.sh [--sim PATH] [--check] [SCENARIO.json ...]
#
# Every scenario under scenarios/ (recursively, except scenarios/golden/ and
# scenarios/traces/), or only the ones named, is run with its own fixed seed
# and its decision log is written to
#   scenarios/golden/<path relative to scenarios/ without .json>.decisions.jsonl
# (scenarios/admission/cooldown.json -> scenarios/golden/admission/cooldown.decisions.jsonl).
# Each scenario is run twice and the two logs must be byte-identical; a
# scenario that is not reproducible leaves its golden untouched and the script
# fails. For every golden that changed, the script prints `heatsink-sim diff
# old new` so the change can be reviewed before it is committed
# (docs/regression.md).
#
#   --sim PATH  the heatsink-sim binary (default: $HEATSINK_SIM, else
#               build/debug/tools/heatsink-sim, else the newest
#               build/*/tools/heatsink-sim)
#   --check     only verify: run every scenario twice, compare with its golden,
#               write nothing; exit 1 when any golden differs or is missing
#
# Exit codes: 0 done (with --check: every golden matches), 1 a difference
# (with --check) or an unreproducible scenario, 2 an error (bad arguments,
# no binary, or a scenario whose run failed; the others are still processed).
set -u -o pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scenario_dir="$root/scenarios"
golden_dir="$scenario_dir/golden"
sim="${HEATSINK_SIM:-}"
check_only=0
scenarios=()

while [[ $# -gt 0 ]]; do
  case "$1" in
    --sim) sim="$2"; shift 2 ;;
    --check) check_only=1; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "update-goldens: unknown option $1" >&2; exit 2 ;;
    *) scenarios+=("$1"); shift ;;
  esac
done

if [[ -z "$sim" && -x "$root/build/debug/tools/heatsink-sim" ]]; then
  sim="$root/build/debug/tools/heatsink-sim"
fi
if [[ -z "$sim" ]]; then
  sim="$(ls -t "$root"/build/*/tools/heatsink-sim 2>/dev/null | head -n 1)"
fi
if [[ -z "$sim" || ! -x "$sim" ]]; then
  echo "update-goldens: no heatsink-sim binary; build it or pass --sim PATH" >&2
  exit 2
fi

if [[ ${#scenarios[@]} -eq 0 ]]; then
  while IFS= read -r f; do scenarios+=("$f"); done < <(
    cd "$scenario_dir" && find . -name '*.json' -type f \
      -not -path './golden/*' -not -path './traces/*' | sed 's|^\./||' | LC_ALL=C sort)
  for i in "${!scenarios[@]}"; do scenarios[$i]="$scenario_dir/${scenarios[$i]}"; done
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

status=0
for scenario in "${scenarios[@]}"; do
  abs="$(cd "$(dirname "$scenario")" && pwd)/$(basename "$scenario")"
  rel="${abs#"$scenario_dir"/}"
  if [[ "$rel" == "$abs" || "$rel" != *.json ]]; then
    echo "update-goldens: $scenario is not a .json file under $scenario_dir" >&2
    exit 2
  fi
  golden="$golden_dir/${rel%.json}.decisions.jsonl"
  failed=0
  for pass in 1 2; do
    out="$scratch/${rel%.json}/$pass"
    "$sim" run "$abs" --out "$out" > "$scratch/log" 2>&1
    rc=$?
    # Exit 1 is a failed scenario check: the decisions are still complete.
    if [[ $rc -ne 0 && $rc -ne 1 ]]; then
      echo "$rel: FAILED: heatsink-sim run exited with $rc; golden left as it was" >&2
      sed 's/^/    /' "$scratch/log" >&2
      failed=1
      break
    fi
  done
  if [[ $failed -eq 1 ]]; then
    status=2
    continue
  fi
  first="$scratch/${rel%.json}/1/decisions.jsonl"
  second="$scratch/${rel%.json}/2/decisions.jsonl"
  if ! cmp -s "$first" "$second"; then
    [[ $status -eq 0 ]] && status=1
    echo "$rel: NOT reproducible (two runs with the same seed differ); golden left as it was"
    "$sim" diff "$first" "$second"
    continue
  fi
  records="$(wc -l < "$first" | tr -d ' ')"
  if [[ -f "$golden" ]] && cmp -s "$golden" "$first"; then
    echo "$rel: unchanged ($records decisions)"
    continue
  fi
  if [[ $check_only -eq 1 ]]; then
    if [[ -f "$golden" ]]; then
      echo "$rel: DIFFERS from $golden"
      "$sim" diff "$golden" "$first"
    else
      echo "$rel: no golden $golden"
    fi
    [[ $status -eq 0 ]] && status=1
    continue
  fi
  mkdir -p "$(dirname "$golden")"
  if [[ -f "$golden" ]]; then
    echo "$rel: updated ($records decisions); review the change:"
    "$sim" diff "$golden" "$first" | sed 's/^/    /'
  else
    echo "$rel: created ($records decisions)"
  fi
  cp "$first" "$golden"
done
exit $status
