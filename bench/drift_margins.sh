#!/usr/bin/env bash
# Each lock's drift margin: `lockcheck boundary` over clock:drift's rate (--drift-ppm), the drift aimed at the
# holder's nodes (a majority), holders that use their whole validity (--hold-ms-min/max = TTL, --lease-margin-ms
# 5), TTL 1 s, 8 s runs with the drift in force about half of each (faults of 1.5 s every 3 s), 10 seeds a probe:
# the largest rate with 10 of 10 valid and the smallest with >= 9 of 10 invalid, beside each lock's drift factor.
# With --pause: the pause boundary instead, the longest holder pause (client-pause, --pause-ms, aimed at the holder)
# each lock survives, with the default careful holder (holds up to 80% of the TTL, released 10% before the
# validity ends), 10 s runs with a pause every 3 s.
#   bench/drift_margins.sh [--locks "redlock redsync ..."] [--budget MIN] [--results DIR] [--pause]
# Needs build/lockcheck and build/clients/ (scripts/build). Writes one boundary folder per lock under DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
locks="redlock redlock-sequential redsync symfony-combined rueidislock"
budget=25
results=results/drift-margins
pause=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --locks) locks=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --pause) pause=1; shift ;;
    --lock-opt) extra+=(--lock-opt "$2"); shift 2 ;;
    *) echo "drift_margins.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
common=(--nemesis-targeting holder --time-limit 8 --nemesis-interval 1.5 --concurrency 3 --ttl-ms 1000
        --hold-ms-min 1000 --hold-ms-max 1000 --lease-margin-ms 5 --seeds 10 --budget-min "$budget" --results "$results")
for lock in $locks; do
  nodes=5
  [ "$lock" = rueidislock ] && nodes=1  # its KeyMajority keys live on one deployment
  if [ "$pause" = 1 ]; then
    build/lockcheck boundary --param pause_ms --from 20 --to 3000 --resolution 50 --lock "$lock" --nodes "$nodes" \
      --nemesis client-pause --nemesis-targeting holder --time-limit 10 --nemesis-interval 1.5 --concurrency 3 \
      --ttl-ms 1000 --seeds 10 --budget-min "$budget" --results "$results" "${extra[@]}" || true
  else
    build/lockcheck boundary --param drift_ppm --from 2000 --to 128000 --scale log --resolution 2500 \
      --lock "$lock" --nodes "$nodes" --nemesis clock:drift "${common[@]}" "${extra[@]}" || true
  fi
done
