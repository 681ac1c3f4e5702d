#!/usr/bin/env bash
# `lockcheck check` end to end (read history.jsonl once, every checker of the lock workload, the report) on
# generated history files of several shapes, with CPU time and peak RSS from /usr/bin/time. Optionally the same
# histories through a Porcupine driver (built outside the repository, see bench/README.md) for comparison.
#
#   bench/check_bench.sh [--build BUILD] [--sizes 100000,1000000] [--repeat 3] [--work DIR] [--porcupine BIN]
#                        [--porcupine-timeout 300] [--porcupine-repeat 1] [--porcupine-mem-gb 6] [--shapes mutex,gen,info5,info20,noretire,p100]
#
# Shapes (bench/history_gen.h via mutex_bench --write-history):
#   mutex     10 processes contending with a 1 ms acquire timeout (many acquires fail)
#   gen       10 processes, nearly every acquire succeeds (the bench generator's default)
#   info5     10 processes, 5% of acquires and releases end as info (retired after info)
#   info20    the same with 20% info
#   noretire  10 processes, 5% info, processes keep their id after an info op
#   p100      100 processes x 2,000 ops (200,000 ops; --sizes does not apply)
# Prints one markdown row per shape and size: CPU s (user+sys, min of --repeat), peak RSS MiB (max), and with
# --porcupine the same for the driver (load + check) and the ratio. Histories are kept in --work for reruns.
set -euo pipefail

build=build sizes=100000,1000000 repeat=3 work=/tmp/lockcheck-check-bench porc="" shapes=mutex,gen,info5,info20,noretire,p100
porc_timeout=300 porc_repeat=1 porc_mem_gb=6
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --porcupine) porc=$2; shift 2 ;;
    --porcupine-timeout) porc_timeout=$2; shift 2 ;;
    --porcupine-repeat) porc_repeat=$2; shift 2 ;;
    --porcupine-mem-gb) porc_mem_gb=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    *) echo "check_bench: unknown argument $1" >&2; exit 2 ;;
  esac
done
lockcheck=$build/lockcheck
gen=$build/bench/mutex_bench
[ -x "$lockcheck" ] && [ -x "$gen" ] || { echo "check_bench: build lockcheck and mutex_bench in $build first" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "check_bench: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
mkdir -p "$work"

shape_flags() {
  case "$1" in
    mutex) echo "--processes 10 --acquire-timeout-ms 1" ;;
    gen) echo "--processes 10" ;;
    info5) echo "--processes 10 --info-pct 5" ;;
    info20) echo "--processes 10 --info-pct 20" ;;
    noretire) echo "--processes 10 --info-pct 5 --no-retire" ;;
    p100) echo "--processes 100" ;;
    *) echo "check_bench: unknown shape $1" >&2; exit 2 ;;
  esac
}

# Runs "$@" --repeat times; prints "min_cpu_s max_rss_mib status" (status of the last run).
measure() {
  local best="" rss=0 st=0 out tf
  tf=$(mktemp)
  for _ in $(seq "$repeat"); do
    st=0
    /usr/bin/time -o "$tf" -f "TIME %U %S %M" "$@" >/dev/null 2>&1 || st=$?
    out=$(grep '^TIME' "$tf" || true)
    [ -n "$out" ] || { rm -f "$tf"; echo "- - $st"; return; }
    read -r _ u s m <<<"$out"
    local cpu
    cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
    if [ -z "$best" ] || awk -v a="$cpu" -v b="$best" 'BEGIN { exit !(a < b) }'; then best=$cpu; fi
    [ "$m" -gt "$rss" ] && rss=$m
  done
  rm -f "$tf"
  echo "$best $((rss / 1024)) $st"
}

printf "| shape | ops | entries | verdict | lockcheck check CPU s | RSS MiB |"
[ -n "$porc" ] && printf " Porcupine CPU s | RSS MiB | result | ratio |"
printf "\n| --- | ---: | ---: | --- | ---: | ---: |"
[ -n "$porc" ] && printf " ---: | ---: | --- | ---: |"
printf "\n"
IFS=, read -r -a shape_list <<<"$shapes"
IFS=, read -r -a size_list <<<"$sizes"
for shape in "${shape_list[@]}"; do
  for n in "${size_list[@]}"; do
    [ "$shape" = p100 ] && n=200000
    # Each run in a folder of its own: `check` also rewrites the index of the run's parent folder, which reads
    # every sibling's results.json.
    dir=$work/$shape-$n/run
    if [ ! -s "$dir/history.jsonl" ]; then
      mkdir -p "$dir"
      # shellcheck disable=SC2046
      "$gen" --write-history "$dir/history.jsonl" --ops "$n" $(shape_flags "$shape") >/dev/null
      echo '{"lock":"single","workload":"lock","nemesis":[],"checker_timeout_s":120}' >"$dir/config.json"
    fi
    entries=$(wc -l <"$dir/history.jsonl")
    read -r cpu rss _ < <(measure "$lockcheck" check "$dir")
    verdict=$(grep -o '"valid": *"[a-z]*"' "$dir/results.json" | head -1 | sed 's/.*"\([a-z]*\)"$/\1/')
    printf "| %s | %s | %s | %s | %s | %s |" "$shape" "$n" "$entries" "$verdict" "$cpu" "$rss"
    if [ -n "$porc" ]; then
      [ -s "$dir/porcupine.json" ] || "$lockcheck" export --format porcupine "$dir" -o "$dir/porcupine.json"
      presult=$( (ulimit -v $((porc_mem_gb * 1024 * 1024)); timeout "$porc_timeout" "$porc" "$dir/porcupine.json") 2>&1 | sed -n 's/^porcupine: [0-9]* ops, \([A-Za-z]*\).*/\1/p' || true)
      [ -n "$presult" ] || presult="none (timeout ${porc_timeout} s or over ${porc_mem_gb} GB)"
      read -r pcpu prss _ < <(ulimit -v $((porc_mem_gb * 1024 * 1024)); repeat=$porc_repeat measure timeout "$porc_timeout" "$porc" "$dir/porcupine.json")
      ratio=$(awk -v p="$pcpu" -v l="$cpu" 'BEGIN { if (l > 0 && p != "-") printf "%.1f", p / l; else print "-" }')
      printf " %s | %s | %s | %s |" "$pcpu" "$prss" "$presult" "$ratio"
    fi
    printf "\n"
    [ "$shape" = p100 ] && break
  done
done
