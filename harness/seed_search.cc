#include "harness/seed_search.h"

#include <algorithm>
#include <iomanip>
#include <vector>

#include "checkers/checker.h"
#include "core/config.h"
#include "core/exit_codes.h"
#include "core/history.h"
#include "harness/runner.h"

namespace lockcheck {

std::optional<int64_t> first_anomaly_ns(const std::string& run_dir, const std::vector<std::string>& only) {
  nlohmann::json results = read_json_file(run_dir + "/results.json");
  // A run that wrote first_anomaly (checkers/first_anomaly.h) says it: the same earliest violation over every
  // checker, its time computed with the history.
  if (only.empty() && results.is_object() && results.contains("first_anomaly")) {
    const nlohmann::json& fa = results["first_anomaly"];
    if (fa.is_null()) return std::nullopt;
    if (fa.is_object() && fa.contains("at_ns") && fa["at_ns"].is_number_integer()) return fa["at_ns"].get<int64_t>();
  }
  std::optional<History> history;  // read only for an anomaly that gives no time but its ops
  std::optional<int64_t> first;
  for_each_violation(results, [&](const nlohmann::json& c, const nlohmann::json& a) {
    if (!only.empty() && std::find(only.begin(), only.end(), c.value("checker", "")) == only.end()) return;
    std::optional<int64_t> t = anomaly_time_ns(a, nullptr);
    if (!t && a.contains("ops")) {
      if (!history) history = read_history(run_dir + "/history.jsonl");
      t = anomaly_time_ns(a, &*history);
    }
    if (t && (!first || *t < *first)) first = t;
  });
  return first;
}

int run_seeds(const RunConfig& base, int n, std::ostream& out) {
  if (n < 1 || n > 1000) throw ConfigError("--seeds: must be between 1 and 1000");
  std::vector<double> firsts;
  int found = 0, failed = 0;
  std::vector<std::string> unknown;  // "seed N (RUN_DIR)": a checker could not decide; in neither count
  const uint64_t first_seed = base.seed ? base.seed : 1;
  for (int i = 0; i < n; ++i) {
    RunConfig cfg = base;
    cfg.seed = first_seed + static_cast<uint64_t>(i);
    RunOutcome o = run_test(cfg, out);
    if (o.exit_code > kExitUnknown) return o.exit_code;  // interrupted
    if (o.exit_code == kExitHarness || o.exit_code == kExitUsage) ++failed;
    if (o.exit_code == kExitUnknown || (o.exit_code == kExitValid && o.valid == Validity::kUnknown)) {
      unknown.push_back("seed " + std::to_string(cfg.seed) + " (" + o.run_dir + ")");
    }
    if (o.valid == Validity::kInvalid) {
      ++found;
      if (auto t = first_anomaly_ns(o.run_dir)) firsts.push_back(static_cast<double>(*t) / 1e9);
    }
  }
  out << "\nseed search: " << found << " of " << n << " seeds found an anomaly";
  if (!unknown.empty()) {
    out << ", " << unknown.size() << " unknown (a checker could not decide: ";
    for (size_t i = 0; i < unknown.size(); ++i) out << (i ? ", " : "") << unknown[i];
    out << ")";
  }
  if (failed) out << " (" << failed << " runs failed)";
  if (!firsts.empty()) {
    std::sort(firsts.begin(), firsts.end());
    const double median =
        firsts.size() % 2 ? firsts[firsts.size() / 2] : (firsts[firsts.size() / 2 - 1] + firsts[firsts.size() / 2]) / 2;
    out << "; median time to the first anomaly " << std::fixed << std::setprecision(1) << median << " s (min "
        << firsts.front() << " s, max " << firsts.back() << " s)";
  }
  out << "\n";
  if (found) return kExitInvalid;
  if (failed) return kExitHarness;
  return unknown.empty() ? kExitValid : kExitUnknown;
}

}  // namespace lockcheck
