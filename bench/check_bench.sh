#!/usr/bin/env bash
# `lockcheck check` end to end (read the history once, every checker of the lock workload, the report) on
# generated histories of several shapes and writers, with CPU time (user + sys, to the millisecond) and peak RSS from wait4's rusage.
# Optionally the same histories through a Porcupine v1.3.1 driver (built outside the repository, see
# bench/README.md) for comparison.
#
#   bench/check_bench.sh [--build BUILD] [--sizes 100000,1000000] [--repeat 3] [--work DIR] [--porcupine BIN]
#                        [--porcupine-timeout 300] [--porcupine-repeat 1] [--porcupine-mem-gb 6]
#                        [--shapes mutex,gen,info5,info20,noretire,p100,spaced,compact,edn] [--pause S]
#
# The driver's path may also come from the environment: PORCUPINE_DRIVER=BIN.
#
# Shapes (bench/history_gen.h via mutex_bench --write-history, 10 processes unless said):
#   mutex     contending with a 1 ms acquire timeout (most acquires fail)
#   gen       nearly every acquire succeeds (the bench generator's default)
#   info5     5% of acquires and releases end as info (the process is retired after info)
#   info20    the same with 20% info
#   noretire  5% info, processes keep their id after an info op
#   p100      100 processes
#   spaced    the gen history as another tool writes JSON: every line re-serialised by Python's json module
#             (a space after each `:` and `,`; needs python3)
#   compact   the same, compact but with the fields in alphabetical order (`sort_keys`, no spaces)
#   edn       the gen history as Jepsen EDN (`lockcheck export --format edn`), checked with `check --format edn`
# Prints one markdown row per shape and size: CPU s (user + sys, the minimum of --repeat runs) and the sys part
# of that run, the same for `check --verdict-only` (no results.json, report or index written; `check --format`
# never writes, so for edn both columns measure the same command), peak RSS MiB (max), and with a driver the same
# for Porcupine (load + check) and the ratios of Porcupine's CPU time to each of lockcheck's. Histories are kept
# in --work for reruns. Porcupine checks the same history for spaced, compact and edn as for gen (its own JSON,
# converted once). Runs follow each other at once by default; --pause S sleeps S seconds before each timed run:
# on a VM that hands free memory back to its host (as the project's does, ~2 s after it is freed), a program
# that runs after a pause pays for fresh pages that one run right after another does not.
set -euo pipefail

build=build sizes=100000,1000000 repeat=3 work=/tmp/lockcheck-check-bench porc=${PORCUPINE_DRIVER:-}
shapes=mutex,gen,info5,info20,noretire,p100,spaced,compact,edn
porc_timeout=300 porc_repeat=1 porc_mem_gb=6 pause=0
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
    --pause) pause=$2; shift 2 ;;
    *) echo "check_bench: unknown argument $1" >&2; exit 2 ;;
  esac
done
lockcheck=$build/lockcheck
gen=$build/bench/mutex_bench
[ -x "$lockcheck" ] && [ -x "$gen" ] || { echo "check_bench: build lockcheck and mutex_bench in $build first" >&2; exit 2; }
command -v python3 >/dev/null || { echo "check_bench: needs python3 (it times each run with wait4)" >&2; exit 2; }
if [ -n "$porc" ] && [ ! -x "$porc" ]; then
  echo "check_bench: --porcupine / PORCUPINE_DRIVER: $porc is not an executable (bench/README.md says how to build it)" >&2
  exit 2
fi
mkdir -p "$work"

# The generator's flags of a shape; the derived shapes (spaced, compact, edn) are written from gen's history.
shape_flags() {
  case "$1" in
    mutex) echo "--processes 10 --acquire-timeout-ms 1" ;;
    gen | spaced | compact | edn) echo "--processes 10" ;;
    info5) echo "--processes 10 --info-pct 5" ;;
    info20) echo "--processes 10 --info-pct 20" ;;
    noretire) echo "--processes 10 --info-pct 5 --no-retire" ;;
    p100) echo "--processes 100" ;;
    *) echo "check_bench: unknown shape $1 (known: mutex, gen, info5, info20, noretire, p100, spaced, compact, edn)" >&2
       exit 2 ;;
  esac
}
base_shape() {
  case "$1" in
    spaced | compact | edn) echo gen ;;
    *) echo "$1" ;;
  esac
}

# Each history in a run folder of its own: `check` also rewrites the index of the run's parent folder, which
# reads every sibling's results.json. Prints the folder.
run_dir() {
  local shape=$1 n=$2 dir
  dir=$work/$shape-$n/run
  if [ ! -s "$dir/history.jsonl" ]; then
    mkdir -p "$dir"
    echo '{"lock":"single","workload":"lock","nemesis":[],"checker_timeout_s":120}' >"$dir/config.json"
    case "$shape" in
      spaced | compact)
        command -v python3 >/dev/null || { echo "check_bench: the $shape shape needs python3" >&2; exit 2; }
        local src
        src=$(run_dir gen "$n")
        python3 - "$shape" "$src/history.jsonl" "$dir/history.jsonl.tmp" <<'EOF'
import json, sys
compact = sys.argv[1] == "compact"
with open(sys.argv[2]) as src, open(sys.argv[3], "w") as dst:
    for line in src:
        op = json.loads(line)
        dst.write((json.dumps(op, separators=(",", ":"), sort_keys=True) if compact else json.dumps(op)) + "\n")
EOF
        mv "$dir/history.jsonl.tmp" "$dir/history.jsonl"
        ;;
      edn)
        local src
        src=$(run_dir gen "$n")
        cp "$src/history.jsonl" "$dir/history.jsonl"
        "$lockcheck" export --format edn "$src" -o "$dir/history.edn"
        ;;
      *)
        # shellcheck disable=SC2046
        "$gen" --write-history "$dir/history.jsonl" --ops "$n" $(shape_flags "$shape") >/dev/null
        ;;
    esac
  fi
  echo "$dir"
}

# Runs "$@" --repeat times; prints "min_cpu_s sys_s_of_that_run max_rss_mib status" (status of the last run).
# CPU and peak RSS of the command alone come from wait4's rusage (python3), to the millisecond: /usr/bin/time
# prints hundredths, too coarse for a 0.05 s check. With --pause S each run follows S seconds of idle.
measure() {
  python3 - "$repeat" "$pause" "$@" <<'EOF'
import os, subprocess, sys, time
repeat, pause, cmd = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
best = None
rss = 0
status = 0
for _ in range(repeat):
    if pause > 0:
        time.sleep(pause)
    try:
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        print("- - - 127")
        sys.exit(0)
    _, st, ru = os.wait4(p.pid, 0)
    status = os.waitstatus_to_exitcode(st)
    cpu = ru.ru_utime + ru.ru_stime
    if best is None or cpu < best[0]:
        best = (cpu, ru.ru_stime)
    rss = max(rss, ru.ru_maxrss)
print("%.3f %.3f %d %d" % (best[0], best[1], rss // 1024, status))
EOF
}

printf "| shape | ops | entries | verdict | lockcheck CPU s (sys) | --verdict-only CPU s (sys) | RSS MiB |"
[ -n "$porc" ] && printf " Porcupine CPU s | RSS MiB | result | ratio | ratio, --verdict-only |"
printf "\n| --- | ---: | ---: | --- | ---: | ---: | ---: |"
[ -n "$porc" ] && printf " ---: | ---: | --- | ---: | ---: |"
printf "\n"
IFS=, read -r -a shape_list <<<"$shapes"
IFS=, read -r -a size_list <<<"$sizes"
for shape in "${shape_list[@]}"; do
  shape_flags "$shape" >/dev/null
  for n in "${size_list[@]}"; do
    dir=$(run_dir "$shape" "$n")
    entries=$(wc -l <"$dir/history.jsonl")
    if [ "$shape" = edn ]; then
      out=$("$lockcheck" check --format edn "$dir/history.edn" 2>&1 || true)
      verdict=$(sed -n 's/^verdict: \([a-z]*\).*/\1/p' <<<"$out")
      read -r cpu sys rss _ < <(measure "$lockcheck" check --format edn "$dir/history.edn")
      vcpu=$cpu vsys=$sys
    else
      read -r vcpu vsys _ _ < <(measure "$lockcheck" check "$dir" --verdict-only)
      read -r cpu sys rss _ < <(measure "$lockcheck" check "$dir")
      verdict=$(grep -o '"valid": *"[a-z]*"' "$dir/results.json" | head -1 | sed 's/.*"\([a-z]*\)"$/\1/')
    fi
    printf "| %s | %s | %s | %s | %s (%s) | %s (%s) | %s |" "$shape" "$n" "$entries" "${verdict:-?}" "$cpu" "$sys" \
      "$vcpu" "$vsys" "$rss"
    if [ -n "$porc" ]; then
      pdir=$(run_dir "$(base_shape "$shape")" "$n")
      [ -s "$pdir/porcupine.json" ] || "$lockcheck" export --format porcupine "$pdir" -o "$pdir/porcupine.json"
      presult=$( (ulimit -v $((porc_mem_gb * 1024 * 1024)); timeout "$porc_timeout" "$porc" "$pdir/porcupine.json") 2>&1 | sed -n 's/^porcupine: [0-9]* ops, \([A-Za-z]*\).*/\1/p' || true)
      [ -n "$presult" ] || presult="none (timeout ${porc_timeout} s or over ${porc_mem_gb} GB)"
      read -r pcpu _ prss _ < <(ulimit -v $((porc_mem_gb * 1024 * 1024)); repeat=$porc_repeat measure timeout "$porc_timeout" "$porc" "$pdir/porcupine.json")
      ratio() { awk -v p="$pcpu" -v l="$1" 'BEGIN { if (l > 0 && p != "-") printf "%.1f", p / l; else print "-" }'; }
      printf " %s | %s | %s | %s | %s |" "$pcpu" "$prss" "$presult" "$(ratio "$cpu")" "$(ratio "$vcpu")"
    fi
    printf "\n"
  done
done
