#!/usr/bin/env bash
# The Debian package end to end (ctest label install; root): builds lockcheck_<version>_amd64.deb with CPack from
# the build folder, installs it on this machine, and runs it as a user would, from an empty folder with no build
# tree reachable (a private mount namespace hides the source and build folders behind an empty tmpfs, and PATH
# does not hold build/): a short healthy run (verdict valid, report written), a run with a clock fault (the
# installed clock shim), the commands the report and the test-all summary print, run as printed, and the shipped
# matrices and bash completion where they were installed. Then removes the package.
#   tests/install_test.sh SOURCE_DIR BUILD_DIR
# Without root it skips (exit 77), except under CI=true, where it fails.
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)

if [ "$(id -u)" -ne 0 ]; then
  if [ "${CI:-}" = true ]; then
    echo "install_test: CI=true and not root: cannot install the package" >&2
    exit 1
  fi
  echo "install_test: needs root (it installs a Debian package); skipped"
  exit 77
fi

fail() {
  echo "install_test: FAIL: $*" >&2
  exit 1
}

work=$(mktemp -d /tmp/lockcheck-install-test.XXXXXX)
installed=0
cleanup() {
  if [ "$installed" = 1 ]; then
    timeout 300 apt-get remove -y -qq lockcheck >/dev/null 2>&1 || timeout 120 dpkg -r lockcheck >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# 1. The package.
version=$(sed -n 's/.*kLockcheckVersion = "\([0-9.]*\)".*/\1/p' "$src/core/version.h")
(cd "$build" && timeout 900 cpack -G DEB -B "$work/package" >"$work/cpack.log" 2>&1) || {
  cat "$work/cpack.log" >&2
  fail "cpack -G DEB failed"
}
deb="$work/package/lockcheck_${version}_amd64.deb"
[ -f "$deb" ] || fail "no $deb (cpack wrote: $(ls "$work/package"))"
echo "install_test: $(basename "$deb"), $(du -h "$deb" | cut -f1)"
depends=$(dpkg-deb -f "$deb" Depends)
echo "install_test: Depends: $depends"
for need in libhiredis libevent libboost-filesystem libboost-program-options libsimdjson redis-server redis-sentinel; do
  case "$depends" in *"$need"*) ;; *) fail "Depends lacks $need: $depends" ;; esac
done
contents=$(dpkg-deb -c "$deb")
for path in ./usr/bin/lockcheck ./usr/lib/lockcheck/liblockcheck_clockshim.so \
  ./usr/lib/lockcheck/liblockcheck_powershim.so \
  ./usr/share/lockcheck/matrix/quick.json ./usr/share/bash-completion/completions/lockcheck; do
  grep -q " $path\$" <<<"$contents" || fail "the package has no $path"
done

# 2. Installed on this machine.
if dpkg-query -W -f='${Status}' lockcheck 2>/dev/null | grep -q "install ok installed"; then
  fail "a lockcheck package is installed already: remove it first (dpkg -r lockcheck)"
fi
installed=1
export DEBIAN_FRONTEND=noninteractive
timeout 600 apt-get install -y -qq --no-install-recommends "$deb" >"$work/apt.log" 2>&1 || {
  cat "$work/apt.log" >&2
  fail "apt-get install $deb failed"
}

# 3. As a user: an empty folder, no build tree. The source folder (and the build folder, when it is elsewhere) is
# covered by an empty tmpfs in a private mount namespace, so a path compiled into the binary that points there
# finds nothing.
hide="mount -t tmpfs none '$src'"
case "$build" in "$src"/*) ;; *) hide="$hide && mount -t tmpfs none '$build'" ;; esac
as_user() {
  (cd "$work/user" && timeout 600 unshare -m bash -c "$hide && cd '$work/user' && $1")
}
# as_user with its output in the file $1 and its exit status in $code, whatever it is.
try_as_user() {
  set +e
  as_user "$2" >"$1" 2>&1
  code=$?
  set -e
}
mkdir -p "$work/user"
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
unset LOCKCHECK_CLOCK_SHIM LOCKCHECK_POWER_SHIM LOCKCHECK_CLIENTS_DIR LOCKCHECK_SERVERS_DIR LOCKCHECK_MATRIX_DIR

[ "$(command -v lockcheck)" = /usr/bin/lockcheck ] || fail "lockcheck is not /usr/bin/lockcheck on PATH"
as_user "lockcheck --version" >"$work/version.txt" || fail "lockcheck --version: exit $?"
cat "$work/version.txt"
grep -q "installed under /usr" "$work/version.txt" || fail "--version does not say it is installed under /usr"
says() { grep -q "$1" "$work/version.txt" || fail "--version does not say: $1"; }
says "^clock shim:  /usr/lib/lockcheck/liblockcheck_clockshim.so$"
says "^power shim:  /usr/lib/lockcheck/liblockcheck_powershim.so$"
says "^matrices:    /usr/share/lockcheck/matrix "
says "^adapters:    /usr/lib/lockcheck/clients$"
if grep -q -- "$src" "$work/version.txt"; then
  fail "--version names the source tree: $(grep -- "$src" "$work/version.txt")"
fi

# A short healthy run: valid, and its report.
try_as_user "$work/run.txt" "lockcheck run --nodes 3 --time-limit 3 --no-progress"
cat "$work/run.txt"
[ "$code" = 0 ] || fail "lockcheck run: exit $code (want 0, valid)"
grep -q "^verdict: valid$" "$work/run.txt" || fail "no 'verdict: valid' (colour must be off into a file)"
run_dir=$(sed -n 's/^results: //p' "$work/run.txt")
[ -f "$work/user/$run_dir/report.html" ] || fail "no report at $run_dir/report.html"
grep -q "lockcheck rerun" "$work/user/$run_dir/report.html" || fail "the report prints no rerun command"

# The rerun command the report prints, run as printed.
report="$work/user/$run_dir/report.html"
rerun_cmd=$(sed -n 's/.*<pre class="cmd" id="rerun">\([^<]*\)<\/pre>.*/\1/p' "$report" | head -1)
[ -n "$rerun_cmd" ] || fail "cannot read the report's rerun command"
try_as_user "$work/rerun.txt" "$rerun_cmd"
[ "$code" = 0 ] || { cat "$work/rerun.txt"; fail "the report's command '$rerun_cmd': exit $code"; }
grep -q "fault timeline matched" "$work/rerun.txt" || {
  cat "$work/rerun.txt"
  fail "the report's command '$rerun_cmd' did not rerun"
}

# A clock fault: the nodes run with the installed clock shim preloaded.
try_as_user "$work/clock.txt" \
  "lockcheck run --nodes 1 --time-limit 3 --nemesis clock:bump --nemesis-interval 1 --no-progress"
[ "$code" = 0 ] || [ "$code" = 1 ] || { cat "$work/clock.txt"; fail "run with --nemesis clock:bump: exit $code"; }

# test-all with a one-entry matrix that finds an anomaly; the summary's reproduce command, as printed.
cat >"$work/user/pause.json" <<'EOF'
{"name": "pause", "defaults": {"ttl_ms": 300, "nemesis_interval_s": 1},
 "entries": [{"name": "single-client-pause", "lock": "single", "nemesis": ["client-pause"],
              "nemesis_targeting": "holder", "time": 6, "seed": 11, "expect": "invalid"}]}
EOF
try_as_user "$work/test-all.txt" "lockcheck test-all --matrix pause.json"
cat "$work/test-all.txt"
[ "$code" = 0 ] || fail "test-all: exit $code (want 0: the expectation met)"
summary=$(sed -n 's/^summary: //p' "$work/test-all.txt")
reproduce_cmd=$(sed -n 's/.*<code>\(lockcheck reproduce [^<]*\)<\/code>.*/\1/p' "$work/user/$summary" | head -1 |
  sed "s/&#39;/'/g")
[ -n "$reproduce_cmd" ] || fail "the summary prints no reproduce command"
as_user "$reproduce_cmd --dry-run" >"$work/reproduce-dry.txt" 2>&1 || {
  cat "$work/reproduce-dry.txt"
  fail "'$reproduce_cmd' does not resolve"
}
try_as_user "$work/reproduce.txt" "$reproduce_cmd --tries 1 --rate 1 --budget-min 0.5"
cat "$work/reproduce.txt"
[ "$code" = 0 ] || [ "$code" = 1 ] || fail "'$reproduce_cmd': exit $code"
# The minimal reproduction, as reproduce prints it (`lockcheck rerun RUN/repro`).
repro_cmd=$(sed -n 's/^   or:  \(lockcheck rerun [^ ]*\) .*/\1/p' "$work/reproduce.txt" | head -1)
if [ -n "$repro_cmd" ]; then
  try_as_user "$work/repro.txt" "$repro_cmd"
  cat "$work/repro.txt"
  [ "$code" = 0 ] || [ "$code" = 1 ] || fail "'$repro_cmd': exit $code"
  grep -q "rerun of the minimal reproduction" "$work/repro.txt" ||
    fail "'$repro_cmd' did not compare with the reproduction"
fi

# The shipped matrices by name, and the completion.
as_user "lockcheck test-all --matrix quick --dry-run" >"$work/quick.txt" 2>&1 || {
  cat "$work/quick.txt"
  fail "--matrix quick"
}
bash -c 'source /usr/share/bash-completion/completions/lockcheck && complete -p lockcheck' >/dev/null ||
  fail "the installed bash completion does not load"

# 4. Removed.
installed=0
timeout 300 apt-get remove -y -qq lockcheck >/dev/null 2>&1 || fail "apt-get remove lockcheck"
[ ! -e /usr/bin/lockcheck ] || fail "/usr/bin/lockcheck is still there after removal"
[ ! -e /usr/lib/lockcheck/liblockcheck_clockshim.so ] || fail "/usr/lib/lockcheck is still there after removal"
echo "install_test: passed"
