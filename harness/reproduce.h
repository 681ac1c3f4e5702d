// `lockcheck reproduce RUN_DIR`: from an INVALID run to the smallest reliable reproduction of its anomaly.
//
// First the reproduction rate of the stored run: its config, seed and fault schedule (schedule.json) again,
// N times; a try reproduces when its results.json has an anomaly of the same kind (checker and "kind" field,
// checkers/checker.h) as the stored run's first one. Then shrinking, in the spirit of delta debugging, each
// candidate one change away from the best case so far and kept when it reproduces in at least R of N tries:
//   1. the time limit cut to just past the first anomaly, tightest first (the faults after it dropped);
//   2. the faults: first the one in force at the first anomaly alone, then each fault dropped one at a time,
//      the others kept at their offsets (the schedule is replayed, `lockcheck run --schedule`);
//   3. the faults kept slid together to earlier offsets (the first at 1 s, else halfway back), then the time
//      limit cut again (the first anomaly may come sooner with fewer and earlier faults);
//   4. fewer client processes (2, then half), fewer keys (1, then half);
//   5. confirmation: the smallest case run N times more must reach R of N again (a case that passed by luck
//      among many candidates does not), else the one kept before it, back to the baseline; its rate is reported.
// A candidate stops early once it cannot reach R of N. A run that fails (exit 2 or 3: a cluster or harness
// error) is not a try; after 3 failed runs of one candidate the search stops. Once a step was kept, the shrink steps leave the time of
// a confirmation (N runs of the best case) in the budget. Nothing is started once the budget would be exceeded:
// the whole shrink ends at most one run (time limit + the start-up seen so far) past the budget, with the best
// case so far. The runs go through a ReproRunner: `lockcheck run` child processes in RUN_DIR/repro/runs for
// the command, a fake in the unit tests (tests/reproduce_test.cc).
//
// RUN_DIR/repro/ then holds config.json and schedule.json of the minimal case, command.txt (the command line
// that runs it), tried.md and tried.json (every candidate: what changed, how often it reproduced), and
// results.json of RUN_DIR gets a "reproduction" object, shown as "Minimal reproduction" in its report.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "nemesis/schedule.h"

namespace lockcheck {

// An anomaly kind: the checker that found it and the anomaly's "kind" ("mutex", "double-grant").
struct AnomalyKind {
  std::string checker;
  std::string kind;
  std::string str() const { return checker + ":" + kind; }
  bool operator==(const AnomalyKind& o) const { return checker == o.checker && kind == o.kind; }
};

// The violations of a run (anomalies of its invalid checkers; "severity": "note" ones are not), each kind once
// with the time of its first occurrence (ns from the start; from_ns, else its ops' times in h; nullopt when
// neither is there), earliest first. Pure.
struct AnomalySeen {
  AnomalyKind kind;
  std::optional<int64_t> first_ns;
};
std::vector<AnomalySeen> anomaly_kinds(const nlohmann::json& results, const History* h);

// One case to run: a config (its seed included) and the fault schedule replayed in it.
struct ReproCase {
  std::string change;  // what makes it differ from the case it was made from ("baseline" for the stored run)
  RunConfig config;
  Schedule schedule;
};

// One try of a case.
struct TrialOutcome {
  bool reproduced = false;                // the target anomaly kind was found
  std::optional<double> first_anomaly_s;  // when it was (seconds from the run's start)
  int exit_code = -1;                     // of the run (core/exit_codes.h); not 0, 1 or 4: it failed, not a try
  bool interrupted = false;               // SIGINT/SIGTERM: the shrink stops with what it has
  std::string run_dir;                    // empty when there is none (the fake runner)
  // Baseline tries: how many of the stored run's faults this run repeated, matched by role (harness/rerun.h).
  std::optional<std::pair<size_t, size_t>> faults_matched;
};

// Runs cases. The real one starts `lockcheck run` child processes; tests pass a fake.
class ReproRunner {
 public:
  virtual ~ReproRunner() = default;
  // Runs c once. candidate: the index of the case in the shrink's list, try_index: 0, 1, ... per run of it
  // (failed runs are run again, so it can pass tries-1).
  virtual TrialOutcome run(const ReproCase& c, size_t candidate, int try_index) = 0;
  // Seconds since an arbitrary start, monotonic (the budget is measured with it).
  virtual double now_s() = 0;
};

struct ReproduceOptions {
  int tries = 10;            // --tries: runs per candidate (N)
  int rate = 8;              // --rate: a candidate is kept when it reproduces in at least this many (R of N)
  double budget_min = 30.0;  // --budget-min: minutes for the whole shrink (see the header comment)
  bool dry_run = false;      // --dry-run: check and read the run, say what the search would do, run nothing
};

// What was tried and how it went.
struct CandidateRecord {
  size_t index = 0;
  std::string change;
  double time_limit_s = 0;
  size_t faults = 0;
  int concurrency = 0;
  int keys = 0;
  int tries = 0;       // runs that completed (fewer than N when it stopped early or the budget ran out)
  int reproduced = 0;  // of them
  std::vector<double> first_anomaly_s;
  int failed = 0;  // runs that ended in a harness or usage error
  std::vector<std::pair<size_t, size_t>> faults_matched;  // per try, when the runner said (baseline)
  bool kept = false;
  std::string note;  // why it stopped early, if it did
  std::optional<double> median_first_s() const;
};
nlohmann::json to_json(const CandidateRecord& r);

struct ShrinkResult {
  std::vector<CandidateRecord> tried;  // tried[0] is the baseline (the stored run again)
  ReproCase best;                      // the smallest case kept (the original when nothing was)
  size_t best_index = 0;               // its record in tried
  bool reproducible = false;           // the baseline reproduced in >= R of N
  bool confirmed = false;              // best's rate was measured again (a confirmation) or it is the baseline
  bool budget_exhausted = false;
  bool interrupted = false;
  bool runs_failing = false;  // a candidate's runs kept failing (exit 2 or 3): the search stopped
  double elapsed_s = 0;
  std::string stopped;  // why the shrink ended, one line
};

// The shrink described in the header comment, from `original` (the stored run). Prints a line per candidate
// to log. REQUIRES: 1 <= o.rate <= o.tries, o.budget_min > 0.
ShrinkResult shrink(const ReproCase& original, const ReproduceOptions& o, ReproRunner& runner, std::ostream& log);

// The number of faults of a schedule (start entries).
size_t fault_count(const Schedule& s);

// `lockcheck reproduce RUN_DIR`: reads the run (ConfigError naming the file when it is not an invalid run
// folder), shrinks with `lockcheck run` children of `binary` (empty: this executable), writes RUN_DIR/repro/
// and the report's section. Returns 1 when the anomaly reproduced (in >= R of N tries of the minimal case),
// 0 when it did not, 3 when runs kept failing (what was found so far is written), 128+signal when interrupted.
int reproduce(const std::string& run_dir, const ReproduceOptions& o, std::ostream& out,
              const std::string& binary = "");

}  // namespace lockcheck
