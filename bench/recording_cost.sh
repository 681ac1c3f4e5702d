#!/usr/bin/env bash
# The cost of recording the history: a healthy local run's throughput (ok ops per second) with recording on,
# and with it off (hidden LOCKCHECK_BENCH_NO_RECORD=1: ops are counted, not written or kept), alternating.
#
#   bench/recording_cost.sh [--build BUILD] [--runs 3] [--time-limit 10] [--lock single] [--concurrency 8]
#                           [-- more run flags]   (default: --hold-ms-max 0 --keys 8, as many ops as the lock allows)
set -euo pipefail
build=build runs=3 limit=10 lock=single conc=8 extra=(--hold-ms-max 0 --keys 8)
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --time-limit) limit=$2; shift 2 ;;
    --lock) lock=$2; shift 2 ;;
    --concurrency) conc=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "recording_cost: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d /tmp/lockcheck-recording-XXXXXX)
trap 'rm -rf "$work"' EXIT
rate() {  # ok ops per second of the run in results folder $1
  local r
  r=$(ls -d "$1"/*/ | grep -v latest | tail -1)
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print('%.0f' % (r['ops']['ok'] / r['duration_s']))" "$r/results.json"
}
printf "| run | recording on (ok ops/s) | recording off (ok ops/s) |\n| ---: | ---: | ---: |\n"
for i in $(seq "$runs"); do
  mkdir -p "$work/on$i" "$work/off$i"
  "$build/lockcheck" run --lock "$lock" --time-limit "$limit" --concurrency "$conc" --seed "$i" --no-progress \
    "${extra[@]}" --results "$work/on$i" >/dev/null 2>&1 || true
  LOCKCHECK_BENCH_NO_RECORD=1 "$build/lockcheck" run --lock "$lock" --time-limit "$limit" --concurrency "$conc" \
    --seed "$i" --no-progress "${extra[@]}" --results "$work/off$i" >/dev/null 2>&1 || true
  printf "| %d | %s | %s |\n" "$i" "$(rate "$work/on$i")" "$(rate "$work/off$i")"
done
