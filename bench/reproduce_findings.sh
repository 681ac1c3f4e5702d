#!/usr/bin/env bash
# Issue 23's figures: for each INVALID entry of the findings matrix (harness/matrix/findings.json), one run
# (seed --seed) through test-all, then `lockcheck reproduce` on it; prints, per entry, the original time limit
# and fault count -> the minimal ones, the minimal case's reproduction rate over --tries runs, and the shrink's
# wall time, with the issue's goal (<= 1/3 of the time, <= 2 faults, >= 8 of 10) met or not. The minimal case's
# rate is measured again after the shrink: its command run --tries more times (the "verified" column), so the
# figure does not rest on the runs that chose it. A row is printed as soon as its entry is done.
#
#   bench/reproduce_findings.sh [--build BUILD] [--results DIR] [--seed 1] [--tries 10] [--rate 8]
#                               [--budget MINUTES] [--only NAME[,NAME...]]
# Needs python3. Takes long: each entry's baseline alone is --tries runs of its 30 s time limit.
set -euo pipefail
build=build results=results/reproduce-findings seed=1 tries=10 rate=8 budget=30 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --tries) tries=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "reproduce_findings: unknown argument $1" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$results"
matrix="$results/findings-invalid.json"
# The findings entries that expect an anomaly (the run's or a checker's), one seed each, in the file's order.
python3 - "$here/harness/matrix/findings.json" "$matrix" "$seed" "$only" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
seed, only = int(sys.argv[3]), [n for n in sys.argv[4].split(",") if n]
def invalid(e):
    x = e.get("expect")
    return x == "invalid" or (isinstance(x, dict) and "invalid" in x.values())
entries = [e for e in m["entries"] if invalid(e) and (not only or e["name"] in only)]
if not entries:
    sys.exit("reproduce_findings: no INVALID entry selected (--only %s)" % sys.argv[4])
defaults = dict(m["defaults"]); defaults.pop("min_found", None)
for e in entries:
    e["seeds"] = [seed]
    e.pop("min_found", None)
json.dump({"name": "findings-invalid", "defaults": defaults, "entries": entries}, open(sys.argv[2], "w"), indent=1)
EOF
"$build/lockcheck" test-all --matrix "$matrix" --results "$results" > "$results/test-all.log" 2>&1 || true
summary=$(ls -d "$results"/test-all-findings-invalid-* | tail -1)

printf "| entry | time limit | faults | processes | stored run rate | minimal rate in the shrink | verified rate | median first anomaly | shrink wall | goal |\n"
printf "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
for f in "$summary"/logs/*.run_dir; do
  entry=$(basename "$f" .run_dir); entry=${entry%-s$seed}
  run=$(head -1 "$f")
  verdict=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('valid','?'))" "$run/results.json" 2>/dev/null || echo "none")
  if [ "$verdict" != "invalid" ]; then
    printf "| %s | seed %s was %s: nothing to reproduce | | | | | | | | |\n" "$entry" "$seed" "$verdict"
    continue
  fi
  start=$(date +%s)
  "$build/lockcheck" reproduce "$run" --tries "$tries" --rate "$rate" --budget-min "$budget" > "$run.reproduce.log" 2>&1 || true
  wall=$(( $(date +%s) - start ))
  # The minimal case's command, --tries more times; a run counts when it shows the same anomaly kind.
  verified=0
  if [ -f "$run/repro/command.txt" ]; then
    read -r -a cmd < "$run/repro/command.txt"
    for i in $(seq "$tries"); do
      "$build/lockcheck" "${cmd[@]:1}" --results "$run/repro/verify" --no-progress > /dev/null 2>&1 || true
      v=$(readlink -f "$run/repro/verify/latest")
      if python3 - "$run/results.json" "$v/results.json" <<'EOF'
import json, sys
want = json.load(open(sys.argv[1]))["reproduction"]["anomaly"]
got = json.load(open(sys.argv[2]))
sys.exit(0 if any(c.get("valid") == "invalid" and c.get("checker") == want["checker"] and
                  any(a.get("kind") == want["kind"] and a.get("severity") != "note" for a in c.get("anomalies", []))
                  for c in got.get("checkers", [])) else 1)
EOF
      then verified=$((verified + 1)); fi
    done
  fi
  python3 - "$run/results.json" "$entry" "$wall" "$tries" "$rate" "$verified" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1])).get("reproduction")
entry, wall, tries, rate, verified = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
if not r:
    print("| %s | reproduce wrote nothing (see the run's .reproduce.log) | | | | | | | %d s | |" % (entry, wall)); sys.exit()
o, m = r["original"], r["minimal"]
med = m.get("median_first_anomaly_s")
full = m["tries"] >= tries
goal = (r["reproducible"] and m["time_limit_s"] <= o["time_limit_s"] / 3 and m["faults"] <= 2
        and full and m["reproduced"] >= rate and verified >= rate)
print("| %s | %g s -> %g s | %d -> %d | %d -> %d | %d of %d | %d of %d | %d of %d | %s | %d s | %s |" % (
    entry, o["time_limit_s"], m["time_limit_s"], o["faults"], m["faults"], o["concurrency"], m["concurrency"],
    o["reproduced"], o["tries"], m["reproduced"], m["tries"], verified, tries,
    "%.1f s" % med if med is not None else "-", wall, "met" if goal else "missed (" + r["stopped"] + ")"))
EOF
done
