// `lockcheck boundary --param NAME --from A --to B [FLAGS] RUN FLAGS...`: where a lock's verdict flips as one
// numeric run parameter moves (a clock drift rate, a pause length, the TTL, a lock option such as drift_factor):
// how much of a fault a lock survives, measured.
//
// A probe runs the configuration with the parameter at one value for N seeds (the same seeds at every probe:
// seed, seed + 1, ...): it is SAFE when none of the N runs was invalid, UNSAFE when at least R of N were (or the
// target anomaly kind, --anomaly), MIXED in between (the boundary zone), UNDECIDED when the budget or an
// interrupt cut it short. A probe stops early once its class is certain (R invalid; or some invalid and R out of
// reach). Both ends are probed first; the unsafe end sets the direction. Then bisection, assuming the verdict is
// monotone in the parameter: between the last safe value and the nearest probe past it that was not safe (the
// safe edge), and between the first unsafe value and the nearest probe before it that was not unsafe (the unsafe
// edge), safe edge first, each until its bracket is no wider than the resolution. A probe that contradicts
// monotonicity (safe past an unsafe one) is kept and named in the notes. The budget is hard: no run starts that
// could end more than one run's time past it. The runs go through harness/child_runs.h (shared with
// `reproduce`): WORK/candidates/NN/ per probe, WORK/runs/ every run, all kept.
//
// WORK (--results/boundary-<param>-<time>/) then holds boundary.json, boundary.md and boundary.html (the table
// and a plot of the invalid share against the parameter, the edges marked).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "harness/reproduce.h"

namespace lockcheck {

struct BoundaryOptions {
  std::string param;        // a config key (drift_ppm), its flag (--drift-ppm), or lock-opt:KEY
  double from = 0;          // --from, --to: the range searched (either order; from may be the unsafe end)
  double to = 0;
  int seeds = 10;           // --seeds: N runs per probe
  int unsafe_at = 0;        // --unsafe-at: R (0: N - N / 10, 9 of 10)
  double resolution = 0;    // --resolution: in the parameter's unit (0: |to - from| / 32; integers >= 1)
  double budget_min = 60;   // --budget-min: minutes
  bool log_scale = false;   // --scale log: geometric midpoints (from and to > 0)
  std::optional<AnomalyKind> target;  // --anomaly CHECKER[:KIND]; nullopt: any violation (an invalid run)
  bool dry_run = false;     // --dry-run: check the search and both ends, say what it would do, run nothing
  int effective_unsafe_at() const { return unsafe_at > 0 ? unsafe_at : seeds - seeds / 10; }
};

enum class ProbeClass { kSafe, kUnsafe, kMixed, kUndecided };
const char* to_string(ProbeClass c);

struct ProbeRecord {
  size_t index = 0;     // in the order run (the candidate folder's number)
  double value = 0;     // the value the runs had (integer fields rounded)
  int tries = 0;        // runs that completed (a run that failed, exit 2 or 3, is not a try)
  int invalid = 0;      // of them
  int failed = 0;
  std::vector<double> first_anomaly_s;
  ProbeClass cls = ProbeClass::kUndecided;
  std::string note;     // why it stopped early, if it did
};
nlohmann::json to_json(const ProbeRecord& p);

struct BoundaryResult {
  std::vector<ProbeRecord> probes;     // in the order run
  bool unsafe_above = true;            // the unsafe end is the larger value
  std::optional<double> last_safe;     // the safe value nearest the flip
  std::optional<double> first_unsafe;  // the unsafe value nearest the flip
  bool resolved = false;               // every edge there is was bracketed to the resolution
  bool budget_exhausted = false;
  bool interrupted = false;
  bool runs_failing = false;
  double elapsed_s = 0;
  std::string stopped;                 // one line: why the search ended
  std::vector<std::string> notes;      // e.g. a probe against monotonicity, an end that is not safe
};
nlohmann::json to_json(const BoundaryResult& r);

// Sets param to value in c: a numeric config field (integer fields get the value rounded) or lock-opt:KEY
// (the option's text). Throws ConfigError naming --param (unknown, not numeric) or the field (out of range).
// Returns the value set.
double set_run_param(RunConfig& c, const std::string& param, double value);

// The search described above, with runner's runs (a fake in tests/boundary_test.cc). Prints a line per probe.
// REQUIRES: valid options (boundary() checks them: ConfigError).
BoundaryResult boundary_search(const RunConfig& base, const BoundaryOptions& o, ReproRunner& runner,
                               std::ostream& log);

// `lockcheck boundary`: checks the options (ConfigError, exit 2: a bad range, a parameter that is not a numeric
// field, an end the field refuses), searches with `lockcheck run` children of binary (empty: this executable),
// writes WORK. Returns 0 when the search ended with its edges bracketed to the resolution (or the whole range
// was one class), 4 when the budget ran out first, 3 when runs kept failing, 128+signal when interrupted.
// --anomaly CHECKER[:KIND]. Throws ConfigError naming the flag on an empty checker or kind.
AnomalyKind parse_anomaly_flag(const std::string& anomaly);

int boundary(const RunConfig& base, const BoundaryOptions& o, std::ostream& out, const std::string& binary = "");

}  // namespace lockcheck
