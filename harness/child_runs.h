// `lockcheck run` child processes for the searches that run one configuration many times: `reproduce` (the
// shrink, harness/reproduce.h) and `boundary` (harness/boundary.h). Each case's config.json (and the schedule it
// replays) goes to WORK/candidates/NN/, each run's folder to WORK/runs/, its output to
// WORK/candidates/NN/tryK.log. A run past its time limit plus a generous margin gets SIGTERM, SIGKILL 30 s
// later, and never runs later than one time limit past the search's budget.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/history.h"
#include "harness/reproduce.h"
#include "sys/signals.h"

namespace lockcheck {

// Runs of one case that failed (exit 2 or 3: not a try) after which a search stops.
constexpr int kMaxFailedChildRuns = 3;

// This executable's path (/proc/self/exe), or "lockcheck" when it cannot be read.
std::string self_exe();

struct ChildRunOptions {
  std::string binary;                 // the lockcheck to run
  std::string work;                   // the search's folder
  std::optional<AnomalyKind> target;  // a try "reproduced" when its run has this kind; nullopt: any violation
  const History* stored = nullptr;    // reproduce: the stored run; its candidate 0's tries match their faults to it
  double budget_s = 3600;             // the search's budget, from the runner's construction
  bool replay_schedule = true;        // pass the case's schedule (--schedule); false: each run plans its own
  bool seed_per_try = false;          // try K runs with the case's seed + K (a seed search); false: the case's seed
};

// What up to N runs of one case gave.
struct TryTally {
  int tries = 0;  // runs that completed (exit 0, 1 or 4)
  int hits = 0;   // of them, those that reproduced (the target kind, or any violation)
  int failed = 0;  // runs that ended in a harness or usage error: not tries
  std::vector<double> first_anomaly_s;                      // per hit (the time limit when the run did not say)
  std::vector<std::pair<size_t, size_t>> faults_matched;    // per try, when the runner said (reproduce's baseline)
  bool interrupted = false;
  bool runs_failing = false;  // kMaxFailedChildRuns failed runs: the search must stop
  std::string note;           // why it stopped before N tries, if it did
};

// The loop `reproduce` and `boundary` share: runs c (candidate's folder) until n tries completed, or `stop_before`
// returns a note (the budget, asked before every run), or `certain` says the outcome cannot change, or an
// interrupt, or kMaxFailedChildRuns failed runs (which are not tries). startup_s: the longest a run took beyond
// its time limit so far, updated (the budget's estimate of the next run).
TryTally run_tries(ReproRunner& runner, const ReproCase& c, size_t candidate, int n, double& startup_s,
                   const std::function<std::string(const TryTally&)>& stop_before,
                   const std::function<std::string(const TryTally&)>& certain);

class ChildRunRunner : public ReproRunner {
 public:
  ChildRunRunner(ChildRunOptions o, const InterruptGuard& interrupt);
  double now_s() override;
  TrialOutcome run(const ReproCase& c, size_t candidate, int try_index) override;

 private:
  ChildRunOptions o_;
  const InterruptGuard& interrupt_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace lockcheck
