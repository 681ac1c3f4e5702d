// mutex_bench: the `mutex` checker on generated lock histories (bench/history_gen.h).
//
//   mutex_bench                          the standard table: 1e5 and 1e6 ops x 5, 10, 50 processes x 0 / 5% info
//   mutex_bench --ops N --processes P [--info-pct X] [--keys K] [--violation-pct V] [--seed S]
//               [--acquire-timeout-ms T]   (default 200; short timeouts make contended histories, many fails)
//                                        one case
//   mutex_bench --no-pruning ...        the same cases through the plain search (wgl::search with every op's
//                                        sequential flag false: no model-aware pruning), to show what it buys
//   mutex_bench --no-retire ...         processes keep their id after an info op (against the workload's
//                                        convention): those processes are searched without pruning
//   mutex_bench --write-history PATH [same options]
//                                        write the generated history as history.jsonl to PATH (no check)
//   mutex_bench --history PATH [--no-pruning]
//                                        check a history.jsonl (read with read_history; "gen" is the read time)
//
// "ops" are client operations (an invoke plus, except for crashed clients at the end, a completion), so a
// history of N ops has about 2N entries. Each case runs in a forked child: the history is generated there,
// the child's peak RSS is reset (/proc/self/clear_refs) once the history is built, and the figures are
// RSS before the check (mostly the history itself), peak RSS during the check, and their difference (what the
// checker added).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench/history_gen.h"
#include "checkers/mutex.h"
#include "core/history.h"

namespace lockcheck {
namespace {

struct Case {
  int64_t ops = 100000;
  int processes = 10;
  int keys = 1;
  double info_pct = 0;
  double violation_pct = 0;
  double acquire_timeout_ms = 200;
  uint64_t seed = 1;
  bool no_pruning = false;
  bool no_retire = false;
  std::string history_path;  // read this history.jsonl instead of generating one
};

struct Figures {
  int64_t events = 0, ops = 0;
  int64_t ok = 0, fail = 0, info = 0;
  char verdict[16] = {};
  double gen_s = 0, gen_cpu_s = 0, check_s = 0, check_cpu_s = 0;
  long rss_before_kib = 0, peak_kib = 0, read_peak_kib = 0;
  int64_t cache_entries = 0;
  int64_t injected = 0;
};

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

long status_kib(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(f, line)) {
    if (line.compare(0, n, field) == 0) return std::atol(line.c_str() + n + 1);
  }
  return -1;
}

LockHistoryOptions gen_options(const Case& c) {
  LockHistoryOptions o;
  o.ops = c.ops;
  o.processes = c.processes;
  o.keys = c.keys;
  o.info_fraction = c.info_pct / 100.0;
  o.violation_fraction = c.violation_pct / 100.0;
  o.seed = c.seed;
  o.acquire_timeout_us = static_cast<int64_t>(c.acquire_timeout_ms * 1000);
  o.retire_after_info = !c.no_retire;
  return o;
}

// The plain search over each key (no pruning), returning a checker-like verdict.
CheckResult check_unpruned(const History& h, std::chrono::milliseconds timeout) {
  CheckResult r;
  const std::vector<int64_t> pairs = pair_index(h);
  std::map<std::string, std::vector<wgl::LinOp>> by_key;
  for (size_t i = 0; i < h.size(); ++i) {
    const Op& op = h[i];
    const int kind = mutex_op_kind(op.f);
    if (!op.is_invoke() || !op.is_client() || kind < 0) continue;
    wgl::LinOp lo;
    lo.call = static_cast<int64_t>(i);
    lo.process = op.process;
    lo.kind = static_cast<int16_t>(kind);
    if (pairs[i] >= 0 && h[static_cast<size_t>(pairs[i])].is_fail()) continue;
    if (pairs[i] >= 0 && h[static_cast<size_t>(pairs[i])].is_ok()) lo.ret = pairs[i];
    by_key[op.key].push_back(lo);
  }
  wgl::SearchLimits limits;
  limits.deadline = std::chrono::steady_clock::now() + timeout;
  int64_t cache = 0;
  for (const auto& kv : by_key) {
    auto s = wgl::search(kv.second, MutexModel{}, limits);  // sequential flags false: no pruning
    cache += static_cast<int64_t>(s.cache_entries);
    switch (s.outcome) {
      case wgl::Outcome::kLinearizable: break;
      case wgl::Outcome::kNotLinearizable: r.valid = merge(r.valid, Validity::kInvalid); break;
      default: r.valid = merge(r.valid, Validity::kUnknown); break;
    }
  }
  r.stats["cache_entries"] = cache;
  return r;
}

Figures run_case(const Case& c) {
  Figures fig;
  const auto t0 = std::chrono::steady_clock::now();
  const double read_cpu0 = cpu_seconds();
  LockHistoryInfo gi;
  History h;
  if (c.history_path.empty()) {
    h = generate_lock_history(gen_options(c), &gi);
  } else {
    h = read_history(c.history_path);
    gi.events = static_cast<int64_t>(h.size());
    for (const Op& op : h) {
      gi.ops += op.is_invoke() && op.is_client();
      gi.ok += op.is_ok();
      gi.fail += op.is_fail();
      gi.info += op.is_info() && op.is_client();
    }
  }
  const auto t1 = std::chrono::steady_clock::now();
  fig.gen_s = std::chrono::duration<double>(t1 - t0).count();
  fig.read_peak_kib = status_kib("VmHWM:");
  fig.gen_cpu_s = cpu_seconds() - read_cpu0;
  fig.events = gi.events;
  fig.ops = gi.ops;
  fig.ok = gi.ok;
  fig.fail = gi.fail;
  fig.info = gi.info;
  fig.injected = gi.injected_violations;
  {
    std::ofstream reset("/proc/self/clear_refs");
    reset << "5";  // reset the peak RSS (VmHWM) to the current RSS
  }
  fig.rss_before_kib = status_kib("VmRSS:");
  MutexChecker checker;
  CheckOptions opts;
  opts.timeout = std::chrono::seconds(120);
  const double cpu0 = cpu_seconds();
  const auto t2 = std::chrono::steady_clock::now();
  CheckResult r = c.no_pruning ? check_unpruned(h, opts.timeout) : run_checker(checker, h, opts);
  const auto t3 = std::chrono::steady_clock::now();
  fig.check_cpu_s = cpu_seconds() - cpu0;
  fig.check_s = std::chrono::duration<double>(t3 - t2).count();
  fig.peak_kib = status_kib("VmHWM:");
  std::snprintf(fig.verdict, sizeof fig.verdict, "%s", to_string(r.valid));
  fig.cache_entries = r.stats.value("cache_entries", int64_t{0});
  return fig;
}

// Runs the case in a child process so that each case's peak RSS is its own.
bool run_forked(const Case& c, Figures* out) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) {
    close(fds[0]);
    Figures f = run_case(c);
    const char* p = reinterpret_cast<const char*>(&f);
    size_t left = sizeof f;
    while (left > 0) {
      const ssize_t w = write(fds[1], p, left);
      if (w <= 0) _exit(2);
      p += w;
      left -= static_cast<size_t>(w);
    }
    _exit(0);
  }
  close(fds[1]);
  char* p = reinterpret_cast<char*>(out);
  size_t got = 0;
  while (got < sizeof *out) {
    const ssize_t r = read(fds[0], p + got, sizeof *out - got);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return got == sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void print_header() {
  std::printf("%9s %9s %5s %5s %6s %8s %8s %8s %12s %9s %9s %9s %8s\n", "ops", "events", "procs", "info%", "viol",
              "verdict", "wall_s", "cpu_s", "ops/s(wall)", "rss0_MiB", "peak_MiB", "check_MiB", "cache");
}

void print_row(const Case& c, const Figures& f) {
  std::printf("%9lld %9lld %5d %5.1f %6lld %8s %8.3f %8.3f %12.0f %9.1f %9.1f %9.1f %8lld\n",
              static_cast<long long>(c.ops), static_cast<long long>(f.events), c.processes, c.info_pct,
              static_cast<long long>(f.injected), f.verdict, f.check_s, f.check_cpu_s,
              static_cast<double>(c.ops) / f.check_s, f.rss_before_kib / 1024.0, f.peak_kib / 1024.0,
              (f.peak_kib - f.rss_before_kib) / 1024.0, static_cast<long long>(f.cache_entries));
  std::fflush(stdout);
}

int usage() {
  std::fprintf(stderr,
               "usage: mutex_bench [--ops N --processes P [--info-pct X] [--keys K] [--violation-pct V] [--seed S]]\n"
               "                   [--no-pruning] [--no-retire] [--write-history PATH]\n"
               "       mutex_bench --history PATH [--no-pruning]\n");
  return 2;
}

}  // namespace
}  // namespace lockcheck

int main(int argc, char** argv) {
  using namespace lockcheck;
  Case one;
  bool single = false;
  std::string write_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--no-retire") {
      one.no_retire = true;
      continue;
    }
    if (a == "--no-pruning") {
      one.no_pruning = true;
      continue;
    }
    if (a == "--history") {
      if (!(v = next())) return usage();
      one.history_path = v;
      single = true;
      continue;
    }
    if (a == "--write-history") {
      if (!(v = next())) return usage();
      write_path = v;
      continue;
    }
    if (!(v = next())) return usage();
    char* end = nullptr;
    const double x = std::strtod(v, &end);
    if (end == v || *end != '\0' || x < 0) {
      std::fprintf(stderr, "mutex_bench: %s needs a non-negative number, got \"%s\"\n", a.c_str(), v);
      return 2;
    }
    if (a == "--ops") {
      one.ops = static_cast<int64_t>(x);
    } else if (a == "--processes") {
      one.processes = static_cast<int>(x);
    } else if (a == "--keys") {
      one.keys = static_cast<int>(x);
    } else if (a == "--info-pct") {
      one.info_pct = x;
    } else if (a == "--violation-pct") {
      one.violation_pct = x;
    } else if (a == "--acquire-timeout-ms") {
      one.acquire_timeout_ms = x;
    } else if (a == "--seed") {
      one.seed = static_cast<uint64_t>(x);
    } else {
      return usage();
    }
    single = true;
  }
  if (one.no_pruning) std::printf("(plain WGL search: no model-aware pruning, timeout 120 s)\n");
  if (one.processes < 1 || one.keys < 1) {
    std::fprintf(stderr, "mutex_bench: --processes and --keys must be at least 1\n");
    return 2;
  }

  if (!write_path.empty()) {
    LockHistoryInfo gi;
    History h = generate_lock_history(gen_options(one), &gi);
    try {
      HistoryWriter w(write_path, nullptr);
      for (Op& op : h) w.record(std::move(op));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mutex_bench: %s\n", e.what());
      return 3;
    }
    std::printf(
        "wrote %s: %lld ops, %lld entries, %d processes (%lld ids), %lld ok, %lld fail, %lld info, %lld injected "
        "violations\n",
        write_path.c_str(), static_cast<long long>(gi.ops), static_cast<long long>(gi.events), one.processes,
        static_cast<long long>(gi.processes_used), static_cast<long long>(gi.ok), static_cast<long long>(gi.fail),
        static_cast<long long>(gi.info), static_cast<long long>(gi.injected_violations));
    return 0;
  }

  std::vector<Case> cases;
  if (single) {
    cases.push_back(one);
  } else {
    for (int64_t ops : {int64_t{100000}, int64_t{1000000}}) {
      for (int p : {5, 10, 50}) {
        for (double info : {0.0, 5.0}) {
          Case c;
          c.ops = ops;
          c.processes = p;
          c.info_pct = info;
          c.no_pruning = one.no_pruning;
          cases.push_back(c);
        }
      }
    }
  }
  if (one.history_path.empty()) print_header();
  for (const Case& c : cases) {
    Figures f;
    if (!run_forked(c, &f)) {
      std::fprintf(stderr, "mutex_bench: the case with %lld ops, %d processes failed\n", static_cast<long long>(c.ops),
                   c.processes);
      return 3;
    }
    if (c.history_path.empty()) {
      print_row(c, f);
    } else {
      std::printf(
          "%s: %lld entries (%lld ops, %lld ok, %lld fail, %lld info) read in %.3f s wall, %.3f s cpu (peak %.1f MiB); "
          "mutex %s "
          "in %.3f s wall, %.3f s cpu, peak %.1f MiB (checker +%.1f MiB), %lld cache entries\n",
          c.history_path.c_str(), static_cast<long long>(f.events), static_cast<long long>(f.ops),
          static_cast<long long>(f.ok), static_cast<long long>(f.fail), static_cast<long long>(f.info), f.gen_s,
          f.gen_cpu_s, f.read_peak_kib / 1024.0, f.verdict, f.check_s, f.check_cpu_s, f.peak_kib / 1024.0,
          (f.peak_kib - f.rss_before_kib) / 1024.0, static_cast<long long>(f.cache_entries));
    }
    if (!single && c.ops == 100000 && c.processes == 10 && c.info_pct == 0) {
      std::printf("  -> wall time to check a 100,000-op lock history with 10 processes: %.3f s (cpu %.3f s)\n",
                  f.check_s, f.check_cpu_s);
    }
  }
  return 0;
}
