#include "harness/child_runs.h"

#include <signal.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "core/exit_codes.h"
#include "core/run_files.h"
#include "harness/rerun.h"
#include "harness/runner.h"
#include "sys/process.h"

namespace fs = boost::filesystem;

namespace lockcheck {

std::string self_exe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "lockcheck";
  buf[n] = '\0';
  return buf;
}

TryTally run_tries(ReproRunner& runner, const ReproCase& c, size_t candidate, int n, double& startup_s,
                   const std::function<std::string(const TryTally&)>& stop_before,
                   const std::function<std::string(const TryTally&)>& certain) {
  TryTally t;
  for (int attempt = 0; t.tries < n; ++attempt) {
    if (std::string why = stop_before(t); !why.empty()) {
      t.note = why;
      break;
    }
    const double before = runner.now_s();
    const TrialOutcome out = runner.run(c, candidate, attempt);
    startup_s = std::max(startup_s, runner.now_s() - before - c.config.time_limit_s);
    if (out.interrupted) {
      t.note = "interrupted";
      t.interrupted = true;
      break;
    }
    if (out.exit_code != kExitValid && out.exit_code != kExitInvalid && out.exit_code != kExitUnknown) {
      // A run that failed (cluster or harness error, a full disk) says nothing of the anomaly: it is not a try.
      // A few in a row mean the machine cannot run this: the search stops with what it has.
      if (++t.failed >= kMaxFailedChildRuns) {
        t.note = std::to_string(t.failed) + " runs failed (harness or cluster errors; see the runs' logs)";
        t.runs_failing = true;
        break;
      }
      continue;
    }
    ++t.tries;
    if (out.faults_matched) t.faults_matched.push_back(*out.faults_matched);
    if (out.reproduced) {
      ++t.hits;
      t.first_anomaly_s.push_back(out.first_anomaly_s.value_or(c.config.time_limit_s));
    }
    if (std::string why = certain(t); !why.empty()) {
      if (t.tries < n) t.note = why;
      break;
    }
  }
  return t;
}

ChildRunRunner::ChildRunRunner(ChildRunOptions o, const InterruptGuard& interrupt)
    : o_(std::move(o)), interrupt_(interrupt), t0_(std::chrono::steady_clock::now()) {}

double ChildRunRunner::now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

TrialOutcome ChildRunRunner::run(const ReproCase& c, size_t candidate, int try_index) {
  TrialOutcome out;
  if (interrupt_.interrupted()) {
    out.interrupted = true;
    return out;
  }
  std::ostringstream name;
  name << std::setw(2) << std::setfill('0') << candidate;
  const std::string dir = o_.work + "/candidates/" + name.str();
  try {
    if (try_index == 0 || !fs::exists(dir + "/config.json")) {
      fs::create_directories(dir);
      RunConfig cfg = c.config;
      cfg.results_dir = o_.work + "/runs";
      cfg.progress = false;
      write_json_file(dir + "/config.json", cfg);
      if (o_.replay_schedule) write_json_file(dir + "/schedule.json", to_json(c.schedule));
      std::ofstream(dir + "/change.txt") << c.change << "\n";
    }
  } catch (const std::exception& e) {
    out.exit_code = kExitHarness;  // the case's files cannot be written (a full disk): a failed run
    return out;
  }
  const std::string stem = dir + "/try" + std::to_string(try_index);
  ProcessSpec spec;
  spec.argv = {o_.binary, "run", "--config", dir + "/config.json", "--no-progress"};
  if (o_.replay_schedule) spec.argv.insert(spec.argv.end(), {"--schedule", dir + "/schedule.json"});
  if (o_.seed_per_try) {
    spec.argv.insert(spec.argv.end(), {"--seed", std::to_string(c.config.seed + static_cast<uint64_t>(try_index))});
  }
  spec.stdout_path = stem + ".log";
  spec.stderr_path = "=stdout";
  spec.env[kRunDirFileEnv] = stem + ".run_dir";
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ChildProcess child(spec);
    std::optional<int> st;
    bool forwarded = false;
    // As test-all does: a run past its time limit plus a generous margin gets SIGTERM, SIGKILL 30 s later;
    // and never later than one time limit past the budget (the budget's hard bound).
    const auto overdue = std::min(
        t0 + std::chrono::seconds(static_cast<int64_t>(c.config.time_limit_s * 2) + 180),
        t0_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(o_.budget_s + c.config.time_limit_s)));
    while (!(st = child.wait_for(std::chrono::milliseconds(200)))) {
      const auto now = std::chrono::steady_clock::now();
      if ((interrupt_.interrupted() || now > overdue) && !forwarded) {
        child.signal(SIGTERM);
        forwarded = true;
      }
      if (now > overdue + std::chrono::seconds(30)) child.kill_and_reap();
    }
    out.exit_code = *st;
  } catch (const std::exception& e) {
    out.exit_code = kExitHarness;
    std::ofstream(stem + ".log", std::ios::app) << "lockcheck: " << e.what() << "\n";
  }
  if (interrupt_.interrupted()) out.interrupted = true;
  {
    std::ifstream in(stem + ".run_dir");
    std::getline(in, out.run_dir);
  }
  if ((out.exit_code == kExitInvalid || out.exit_code == kExitValid) && !out.run_dir.empty()) {
    try {
      const nlohmann::json results = read_json_file(out.run_dir + "/results.json");
      const History h = read_history(out.run_dir + "/history.jsonl");
      if (candidate == 0 && o_.stored) out.faults_matched = fault_timeline_match(*o_.stored, h);
      for (const auto& a : anomaly_kinds(results, &h)) {
        if (o_.target && !(a.kind == *o_.target)) continue;
        out.reproduced = true;
        if (a.first_ns && (!out.first_anomaly_s || static_cast<double>(*a.first_ns) / 1e9 < *out.first_anomaly_s)) {
          out.first_anomaly_s = static_cast<double>(*a.first_ns) / 1e9;
        }
      }
    } catch (const std::exception& e) {
      std::ofstream(stem + ".log", std::ios::app) << "lockcheck: cannot read the run: " << e.what() << "\n";
    }
  }
  return out;
}

}  // namespace lockcheck
