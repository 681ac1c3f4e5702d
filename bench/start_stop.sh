#!/usr/bin/env bash
# How long a run takes to start its cluster and to stop it, per server kind, for two lockcheck binaries side by
# side (an older build against this one), as `lockcheck run` itself does it: each round runs a 1 s healthy run of
# every scenario with each binary in turn, and reads the times from the run's lockcheck.log:
#   start  from "starting N nodes" to the last "node nK at" line (every member started and ready)
#   stop   from "stopping the cluster" to "cluster stopped"
# and the whole run's CPU time (user + system of lockcheck and everything it started).
#
#   bench/start_stop.sh [--before DIR] [--after DIR] [--rounds 5] [--cluster local|docker]
#
# DIR holds a lockcheck binary and, as a build folder does, liblockcheck_clockshim.so, liblockcheck_powershim.so,
# clients/ and servers/ (default: --after build, no --before). Prints a Markdown table: per scenario and binary the
# median and min start and stop (ms) and the min CPU (s) over the rounds. Never asserts on speed.
set -euo pipefail
before="" after=build rounds=5 cluster=local
while [ $# -gt 0 ]; do
  case "$1" in
    --before) before=$2; shift 2 ;;
    --after) after=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --cluster) cluster=$2; shift 2 ;;
    *) echo "start_stop: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$rounds" in '' | *[!0-9]* | 0) echo "start_stop: --rounds must be a positive integer" >&2; exit 2 ;; esac
work=$(mktemp -d /tmp/lockcheck-start-stop-XXXXXX)
trap 'rm -rf "$work"' EXIT

# name|flags: the scenarios, each a server kind and shape a matrix runs.
scenarios=(
  "redis independent|--server redis --lock redlock"
  "redis replicated|--server redis --topology replicated --lock single-failover"
  "redis cluster|--server redis --topology cluster --lock cluster"
  "etcd|--server etcd --lock etcd"
  "zookeeper|--server zookeeper --lock kazoo"
)
binaries=()
[ -n "$before" ] && binaries+=("before|$before")
binaries+=("after|$after")

run_one() {  # label dir flags... -> "start_ms stop_ms cpu_s" on stdout
  local label=$1 dir=$2
  shift 2
  local out="$work/$label-$RANDOM$RANDOM"
  mkdir -p "$out"
  LOCKCHECK_CLOCK_SHIM="$dir/liblockcheck_clockshim.so" LOCKCHECK_POWER_SHIM="$dir/liblockcheck_powershim.so" \
    LOCKCHECK_CLIENTS_DIR="$dir/clients" LOCKCHECK_SERVERS_DIR="$dir/servers" \
    python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
open(sys.argv[1], "w").write("%f %f\n" % (r.ru_utime, r.ru_stime))' "$out/time" \
    "$dir/lockcheck" run --cluster "$cluster" --time-limit 1 --concurrency 2 --nemesis none --seed 1 \
    --no-progress --results "$out" "$@" >"$out/stdout" 2>&1 || true
  local log
  log=$(ls "$out"/*/lockcheck.log 2>/dev/null | head -1)
  if [ -z "$log" ]; then
    echo "start_stop: $label: no run log (see $out/stdout):" >&2
    tail -3 "$out/stdout" >&2
    echo "- - -"
    return
  fi
  python3 - "$log" "$out/time" <<'EOF'
import re, sys
t = {}
for line in open(sys.argv[1]):
    m = re.match(r"\[(\d+) ms\] (.*)", line)
    if not m:
        continue
    ms, text = int(m.group(1)), m.group(2)
    if text.startswith("starting ") and "start" not in t:
        t["start"] = ms
    elif re.match(r"node n\d+ at ", text):
        t["ready"] = ms
    elif text.startswith("stopping the cluster"):
        t["stopping"] = ms
    elif text.startswith("cluster stopped"):
        t["stopped"] = ms
u, s = open(sys.argv[2]).read().split()[-2:]
start = t["ready"] - t["start"] if "ready" in t and "start" in t else "-"
stop = t["stopped"] - t["stopping"] if "stopped" in t and "stopping" in t else "-"
print(start, stop, "%.2f" % (float(u) + float(s)))
EOF
}

for r in $(seq "$rounds"); do
  for sc in "${scenarios[@]}"; do
    name=${sc%%|*}
    read -r -a flags <<<"${sc#*|}"
    for b in "${binaries[@]}"; do
      label=${b%%|*}
      echo "$name|$label|$(run_one "$label" "${b#*|}" "${flags[@]}")" >>"$work/rows"
    done
  done
  echo "start_stop: round $r of $rounds done" >&2
done

python3 - "$work/rows" <<'EOF'
import statistics, sys
rows = {}
order = []
for line in open(sys.argv[1]):
    name, label, vals = line.rstrip("\n").split("|")
    key = (name, label)
    if key not in rows:
        rows[key] = []
        order.append(key)
    rows[key].append(vals.split())
def col(vals, i, f):
    xs = [f(v[i]) for v in vals if len(v) == 3 and v[i] != "-"]
    return xs
print("| scenario | binary | start ms (median, min) | stop ms (median, min) | CPU s (min) | rounds ok |")
print("| --- | --- | ---: | ---: | ---: | ---: |")
for key in order:
    vals = rows[key]
    st, sp, cpu = col(vals, 0, int), col(vals, 1, int), col(vals, 2, float)
    fmt = lambda xs: "%d, %d" % (statistics.median(xs), min(xs)) if xs else "-"
    print("| %s | %s | %s | %s | %s | %d of %d |" % (key[0], key[1], fmt(st), fmt(sp),
          "%.2f" % min(cpu) if cpu else "-", len(st), len(vals)))
EOF
