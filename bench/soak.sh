#!/usr/bin/env bash
# A soak: one long run with every nemesis combined (partitions, node pauses, kills, clock jumps, client pauses and
# client crashes) on the local backend, while the harness's RSS and open file descriptors are sampled every 10 s.
# Afterwards it checks that
#   - every op the clients made is in the history: results.json's client_ops (counted by the client processes
#     where they hand an op to the history) equals the client ops read back from history.jsonl, by type;
#   - every fault was undone: each fault op in the history has its heal, and the faults checker's verdict;
#   - nothing is left behind: no process of the run (redis-server, adapters) still running, no port of the run
#     still listening, no temporary file of the run outside its results folder.
# Prints a Markdown table of the samples and a summary; exits 1 when a check fails, 2 on a bad argument.
#
#   bench/soak.sh [MINUTES] [CLIENTS] [LOCK] [--build DIR] [--results DIR] [--seed N] [-- more run flags]
#   defaults: 30 minutes, 50 clients, lock redlock (built in); e.g. `bench/soak.sh 30 50 redsync` for a
#   shipped library (build/clients/ must hold its adapter: scripts/build-clients).
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=30 clients=50 lock=redlock build=build results="" seed=1 extra=()
positional=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=${2:?--build needs a folder}; shift 2 ;;
    --results) results=${2:?--results needs a folder}; shift 2 ;;
    --seed) seed=${2:?--seed needs a number}; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "soak: unknown flag $1" >&2; exit 2 ;;
    *)
      positional=$((positional + 1))
      case $positional in
        1) minutes=$1 ;;
        2) clients=$1 ;;
        3) lock=$1 ;;
        *) echo "soak: too many arguments ($1): MINUTES CLIENTS LOCK" >&2; exit 2 ;;
      esac
      shift ;;
  esac
done
[[ $minutes =~ ^[0-9]+([.][0-9]+)?$ ]] && [ "$(awk "BEGIN{print ($minutes > 0)}")" = 1 ] ||
  { echo "soak: MINUTES must be a positive number, not '$minutes'" >&2; exit 2; }
[[ $clients =~ ^[1-9][0-9]*$ ]] || { echo "soak: CLIENTS must be a positive integer, not '$clients'" >&2; exit 2; }
[ -x "$build/lockcheck" ] || { echo "soak: no $build/lockcheck (build it first, or --build DIR)" >&2; exit 2; }
limit=$(awk "BEGIN{printf \"%d\", $minutes * 60}")
[ -n "$results" ] || results=$(mktemp -d /tmp/lockcheck-soak-XXXXXX)
mkdir -p "$results"
samples="$results/samples.tsv"
# Faults every 5 s on average, each nemesis by turn; TTL 1 s; the client crashes and pauses aim at any holder.
nemeses=partition,pause,kill,clock,client-pause,client-crash
nodes=5
case $lock in redis-py|redislock|symfony-lock|laravel|single|setnx-expire|getset|set-nx-ex-del|set-nx-timestamp) nodes=1 ;; esac
# Files a run could leave outside its results folder (in /tmp and /dev/shm, by the names lockcheck, its nodes and
# its adapters use), compared before and after; other sessions' files on a shared machine are not counted.
tmp_before=$(mktemp)
trap 'rm -f "$tmp_before"' EXIT
leftovers() {
  find /tmp /dev/shm -mindepth 1 -maxdepth 1 2>/dev/null | grep -Ei 'lockcheck|lcssh|redis|etcd|clock|redsync|go-build' |
    sort || true
}
leftovers >"$tmp_before"

descendants() {  # pid and command of every process below $1
  local c
  for c in $(pgrep -P "$1" 2>/dev/null || true); do
    printf "%s %s\n" "$c" "$(tr '\0' ' ' 2>/dev/null <"/proc/$c/cmdline" | cut -c1-200 | sed 's/ *$//')"
    descendants "$c"
  done
}
: >"$results/children"
run_dir_file="$results/run_dir"
LOCKCHECK_RUN_DIR_FILE="$run_dir_file" "$build/lockcheck" run --lock "$lock" --nodes "$nodes" --concurrency "$clients" \
  --nemesis "$nemeses" --time-limit "$limit" --seed "$seed" --results "$results" --no-progress "${extra[@]}" \
  >"$results/run.out" 2>&1 &
pid=$!
start=$(date +%s)
printf "t_s\trss_kib\tfds\tthreads\thistory_lines\tphase\n" >"$samples"
while kill -0 "$pid" 2>/dev/null; do
  if [ -r "/proc/$pid/status" ]; then
    rss=$(awk '/^VmRSS:/{print $2}' "/proc/$pid/status" 2>/dev/null || echo "")
    threads=$(awk '/^Threads:/{print $2}' "/proc/$pid/status" 2>/dev/null || echo "")
    fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
    lines=0
    history="$(cat "$run_dir_file" 2>/dev/null)/history.jsonl"
    if [ -f "$history" ]; then lines=$(wc -l <"$history"); fi
    # The run's phase: "after" once its time limit has passed (teardown, then the check, which reads the whole
    # history into memory: the checker's own figure, bench/README), "run" before.
    phase=run
    if [ $(($(date +%s) - start)) -gt "$limit" ]; then phase=after; fi
    [ -n "$rss" ] && printf "%d\t%s\t%s\t%s\t%s\t%s\n" $(($(date +%s) - start)) "$rss" "$fds" "$threads" "$lines" "$phase" >>"$samples"
  fi
  # Every process the run started (nodes, adapters, the resource server), for the leftovers check.
  descendants "$pid" >>"$results/children"
  sleep 10
done
set +e
wait "$pid"
status=$?
set -e
run_dir=$(cat "$run_dir_file")
sleep 2  # the nodes' processes are reaped by now; give the kernel a moment to close their sockets

# What the run left: processes whose command line names the run folder (nodes, adapters, the resource), ports
# those processes listened on (from the config's node endpoints, in results.json), files in /tmp.
left_procs=$(pgrep -af -- "$run_dir" || true)
while read -r cpid cmd; do
  # Still alive with the same command line (not a reused pid): left behind.
  if [ -n "$cpid" ] && [ -n "$cmd" ] && [ "$(tr '\0' ' ' 2>/dev/null <"/proc/$cpid/cmdline" | cut -c1-200 | sed 's/ *$//')" = "$cmd" ]; then
    left_procs="$left_procs
$cpid $cmd"
  fi
done < <(sort -u "$results/children")
children_seen=$(cut -d' ' -f1 "$results/children" | sort -u | wc -l)
ports=$(python3 -c "
import json,sys
r=json.load(open(sys.argv[1]))
print(' '.join(n['endpoint'].rsplit(':',1)[1] for n in r.get('nodes',[])))" "$run_dir/results.json")
left_ports=""
for p in $ports; do
  if ss -Hltn "sport = :$p" | grep -q .; then left_ports="$left_ports $p"; fi
done
left_tmp=$(comm -13 "$tmp_before" <(leftovers) | grep -v "^$results" || true)

python3 - "$run_dir" "$samples" "$status" "$limit" "$left_procs" "$left_ports" "$left_tmp" "$children_seen" <<'EOF'
import json, sys, collections
run_dir, samples, status, limit, left_procs, left_ports, left_tmp, children_seen = sys.argv[1:9]
r = json.load(open(run_dir + "/results.json"))
client = collections.Counter()
nemesis = collections.Counter()
with open(run_dir + "/history.jsonl") as f:
    for line in f:
        if not line.strip():
            continue
        op = json.loads(line)
        (nemesis if op["process"] == "nemesis" else client)[op["type"]] += 1
rows = [l.rstrip("\n").split("\t") for l in open(samples)][1:]
checking = [int(row[1]) for row in rows if len(row) == 6 and row[5] == "after"]
rows = [[int(x) for x in row[:5]] for row in rows if len(row) == 6 and row[5] == "run"]
failed = []
print("Samples while the run ran (after its time limit, apart, below):\n")
print("| t (s) | RSS (MiB) | open fds | threads | history lines |")
print("| ---: | ---: | ---: | ---: | ---: |")
step = max(1, len(rows) // 12)
for i, (t, rss, fds, th, lines) in enumerate(rows):
    if i % step == 0 or i == len(rows) - 1:
        print(f"| {t} | {rss / 1024:.1f} | {fds} | {th} | {lines} |")
# Flat: after the first minute (start-up), the last third's peak RSS within 20% (and 16 MiB) of the middle
# third's; open fds swing with the faults (connections dropped and made again, nodes restarted), so a leak is a
# rising floor: the last third's fewest fds within 10% + 16 of the middle third's. The growth per 1000 history
# lines says whether memory follows the ops.
steady = [row for row in rows if row[0] >= 60]
if len(steady) >= 6:
    third = len(steady) // 3
    mid, last = steady[third:2 * third], steady[2 * third:]
    rss1, rss2 = max(x[1] for x in mid), max(x[1] for x in last)
    fd1, fd2 = min(x[2] for x in mid), min(x[2] for x in last)
    dl = steady[-1][4] - steady[0][4]
    per_k = (steady[-1][1] - steady[0][1]) / (dl / 1000) if dl > 0 else 0
    print(f"\nfrom t=60 s: RSS peak middle third {rss1/1024:.1f} MiB, last third {rss2/1024:.1f} MiB "
          f"({per_k:.1f} KiB per 1000 history lines); fewest fds middle third {fd1}, last third {fd2} "
          f"(most {max(x[2] for x in steady)}); {len(rows)} samples")
    if rss2 > rss1 * 1.2 and rss2 - rss1 > 16 * 1024:
        failed.append("RSS grew")
    if fd2 > fd1 * 1.1 + 16:
        failed.append("open fds grew")
else:
    print(f"\n{len(rows)} samples: too short a run to judge RSS and fds (6 after the first minute needed)")
if checking:
    print(f"after the time limit (teardown and the check): peak RSS {max(checking)/1024:.1f} MiB over "
          f"{len(checking)} samples (the check reads the whole history into memory: the checker's figure)")
co = r.get("client_ops")
print(f"client ops counted by the clients: {co}")
print(f"client ops in history.jsonl:       {dict(client)}; nemesis ops {sum(nemesis.values())}")
if co is None:
    failed.append("results.json has no client_ops")
else:
    for t in ("invoke", "ok", "fail", "info"):
        if co[t] != client.get(t, 0):
            failed.append(f"client {t} ops: counted {co[t]}, in the history {client.get(t, 0)}")
faults = next((c for c in r.get("checkers", []) if c.get("checker") == "faults"), None)
if faults is not None:
    print(f"faults checker: {faults.get('valid')}: {faults.get('summary')}")
open_faults = nemesis.get("invoke", 0) - sum(v for k, v in nemesis.items() if k != "invoke")
print(f"nemesis ops: {dict(nemesis)}; invokes without a completion: {open_faults}")
if open_faults != 0:
    failed.append("a nemesis op has no completion")
log = open(run_dir + "/lockcheck.log").read()
undone = "nemesis: every fault undone" in log
heal_failed = log.count("final heal failed")
print(f"lockcheck.log: every fault undone: {'yes' if undone else 'NO'}; final heals that failed: {heal_failed}")
if not undone or heal_failed:
    failed.append("a fault was not undone")
print(f"verdict {r.get('valid')} (exit {status}), duration {r.get('duration_s', 0):.0f} s of {limit}; error: {r.get('error')}")
if r.get("error"):
    failed.append("the run ended in an error: " + r["error"])
if int(status) not in (0, 1, 4):
    failed.append(f"exit status {status}")
print(f"processes the run started (seen in the samples): {children_seen}")
for what, v in (("processes", left_procs), ("listening ports", left_ports), ("files in /tmp", left_tmp)):
    print(f"left behind, {what}: {v.strip() or 'none'}")
    if v.strip():
        failed.append(f"left behind: {what}")
print("SOAK " + ("FAILED: " + "; ".join(failed) if failed else "PASSED"))
sys.exit(1 if failed else 0)
EOF
