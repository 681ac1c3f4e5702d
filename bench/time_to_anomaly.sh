#!/usr/bin/env bash
# Time to the first anomaly, fault timing against fault timing: runs a matrix twice over the same seeds with
# `lockcheck test-all`, once with every entry's nemesis_timing forced to the first timing (default random) and
# once to the second (default lock-state: faults timed to the lock's state, --nemesis-timing), each entry with
# --seeds N seeds of --time-limit S seconds. Per entry and timing it reports: found k/n (the seeds whose runs found
# an anomaly in what the entry is about, from test-all's summary.json), the median and p90 (nearest rank) time to
# the first anomaly over those seeds (summary.json's first_anomaly_s), and the expected run time to reach an
# anomaly:
#     E = mean(first-anomaly time over the found seeds) + time_limit * misses / founds
# (each miss costs a whole run; the expected number of misses before a find is misses / founds); "-" when no seed
# found one. Then each side's wall time and, per entry, the ratio of the medians (second / first). Entries
# without a nemesis have no fault to time: they run once (with the first timing) and say "no fault to time".
#
#   bench/time_to_anomaly.sh [--matrix findings|FILE] [--seeds 10] [--time-limit 20] [--parallel 1]
#                            [--entries a,b,c] [--timings random,lock-state] [--build build] [--out DIR]
#
# Remake it: the same command (the seeds are 1..N on both sides). Writes DIR (default
# results/time-to-anomaly-<matrix>-<UTC time>/): the two derived matrices (matrix-1-T.json, matrix-2-T.json),
# each side's test-all folder under side-1-T/ and side-2-T/, and table.md (also printed). A lockcheck without
# --nemesis-timing (before the timing branch) takes only "random", by leaving the field out (its only timing).
set -euo pipefail
cd "$(dirname "$0")/.."
matrix=findings seeds=10 limit=20 parallel=1 entries="" timings="random,lock-state" build=build out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --matrix) matrix=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --time-limit) limit=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --entries) entries=$2; shift 2 ;;
    --timings) timings=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "time_to_anomaly.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
IFS=, read -r timing1 timing2 <<<"$timings"
if [ -z "${timing1:-}" ] || [ -z "${timing2:-}" ]; then
  echo "time_to_anomaly.sh: --timings takes two values, e.g. random,lock-state" >&2; exit 2
fi
case "$matrix" in
  */*|*.json) matrix_file=$matrix ;;
  *) matrix_file=harness/matrix/$matrix.json ;;
esac
[ -f "$matrix_file" ] || { echo "time_to_anomaly.sh: no matrix $matrix_file" >&2; exit 2; }
[ -x "$build/lockcheck" ] || { echo "time_to_anomaly.sh: no $build/lockcheck (build it first)" >&2; exit 2; }
# Whether this lockcheck knows nemesis_timing; without it only "random" (the field left out) can run.
has_timing=0
"$build/lockcheck" run --help 2>&1 | grep -q -- '--nemesis-timing' && has_timing=1
for t in "$timing1" "$timing2"; do
  if [ "$has_timing" = 0 ] && [ "$t" != random ]; then
    echo "time_to_anomaly.sh: $build/lockcheck has no --nemesis-timing: only 'random' runs (asked for '$t')" >&2
    exit 2
  fi
done
name=$(basename "$matrix_file" .json)
[ -n "$out" ] || out=results/time-to-anomaly-$name-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"

# derive SIDE TIMING: writes $out/matrix-SIDE-TIMING.json; side 1 keeps the entries without a nemesis.
derive() {
  python3 - "$matrix_file" "$out/matrix-$1-$2.json" "$1" "$2" "$seeds" "$limit" "$entries" "$has_timing" <<'EOF'
import json, sys
src, dst, side, timing, seeds, limit, only, has_timing = sys.argv[1:]
m = json.load(open(src))
defaults = m.get("defaults", {})
defaults.pop("min_found", None)
only = [e for e in only.split(",") if e]
known = [e["name"] for e in m["entries"]]
for e in only:
    if e not in known:
        sys.exit("time_to_anomaly.sh: no entry '%s' in %s (entries: %s)" % (e, src, ", ".join(known)))
entries = []
for e in m["entries"]:
    if only and e["name"] not in only:
        continue
    nemesis = e.get("nemesis", defaults.get("nemesis", []))
    if not nemesis and side != "1":
        continue  # no fault to time: run once, on side 1
    e = dict(e)
    e.pop("time", None)
    e.pop("max_found", None)
    e["time_limit_s"] = float(limit)
    e["seeds"] = int(seeds)
    e["min_found"] = 1  # found k of n is what is measured; the shipped expectation stays in the table
    if nemesis and has_timing == "1":
        e["nemesis_timing"] = timing
    entries.append(e)
if not entries:
    sys.exit("time_to_anomaly.sh: no entry to run")
m["name"] = "%s-%s-%s" % (m.get("name", "matrix"), side, timing)
m["defaults"] = defaults
m["entries"] = entries
json.dump(m, open(dst, "w"), indent=1)
EOF
}

# run SIDE TIMING: test-all over the derived matrix; prints the side's wall time in seconds.
run_side() {
  local dir=$out/side-$1-$2 t0 t1
  mkdir -p "$dir"
  t0=$(date +%s.%N)
  # test-all exits 1 when an expectation is not met: the measurement is found k of n, not the exit status.
  "$build/lockcheck" test-all --matrix "$out/matrix-$1-$2.json" --parallel "$parallel" --results "$dir" \
    >"$dir/test-all.log" 2>&1 || true
  t1=$(date +%s.%N)
  ls -d "$dir"/test-all-*/summary.json >/dev/null 2>&1 ||
    { echo "time_to_anomaly.sh: side $1 ($2) wrote no summary.json; see $dir/test-all.log" >&2; tail -5 "$dir/test-all.log" >&2; exit 3; }
  python3 -c "import sys; print('%.0f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$t1"
}

derive 1 "$timing1"
derive 2 "$timing2"
echo "time_to_anomaly: $name, seeds 1..$seeds, $limit s runs, $parallel at a time; timings $timing1 then $timing2" >&2
wall1=$(run_side 1 "$timing1")
echo "  side 1 ($timing1): $wall1 s" >&2
wall2=$(run_side 2 "$timing2")
echo "  side 2 ($timing2): $wall2 s" >&2

python3 - "$matrix_file" "$out" "$timing1" "$timing2" "$wall1" "$wall2" "$limit" "$seeds" <<'EOF' | tee "$out/table.md"
import glob, json, math, sys
src, out, t1, t2, wall1, wall2, limit, seeds = sys.argv[1:]
limit = float(limit)
shipped = {e["name"]: e for e in json.load(open(src))["entries"]}

def side(n, t):
    path = sorted(glob.glob("%s/side-%s-%s/test-all-*/summary.json" % (out, n, t)))[-1]
    return {e["name"]: e for e in json.load(open(path))["entries"]}

def median(v):
    v = sorted(v)
    if not v: return None
    k = len(v) // 2
    return v[k] if len(v) % 2 else (v[k - 1] + v[k]) / 2

def p90(v):  # nearest rank
    v = sorted(v)
    return v[max(0, math.ceil(0.9 * len(v)) - 1)] if v else None

def s(x):
    return "-" if x is None else "%.1f" % x

def expect_text(e):
    x = e.get("expect")
    return x if isinstance(x, str) else ", ".join("%s: %s" % kv for kv in x.items())

sides = [(t1, side(1, t1)), (t2, side(2, t2))]
print("| entry | expectation | timing | found | median s | p90 s | expected s to an anomaly | median ratio (%s / %s) |" % (t2, t1))
print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
for name in sides[0][1]:
    medians = []
    rows = []
    for t, entries in sides:
        e = entries.get(name)
        if e is None:
            continue
        faults = bool(e.get("settings", {}).get("nemesis"))
        times = e.get("first_anomaly_s", [])
        n, found = e["n"], e["found"]
        m = median(times)
        medians.append(m)
        exp = None
        if found and times:
            exp = sum(times) / len(times) + limit * (n - found) / found
        rows.append([name, expect_text(shipped.get(name, e.get("settings", {}))), t if faults else "no fault to time",
                     "%d/%d" % (found, n), s(m), s(p90(times)), s(exp), ""])
    if len(medians) == 2 and medians[0] and medians[1] is not None:
        rows[-1][-1] = "%.2f" % (medians[1] / medians[0])
    for r in rows:
        print("| " + " | ".join(r) + " |")
print()
print("Wall time: %s %s s, %s %s s (seeds 1..%s, %g s runs). E = mean first-anomaly time over the found seeds "
      "+ time limit x misses / founds." % (t1, wall1, t2, wall2, seeds, limit))
EOF
echo "time_to_anomaly: $out/table.md" >&2
