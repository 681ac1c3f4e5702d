#include "harness/rerun.h"

#include <boost/filesystem.hpp>

#include "core/run_files.h"
#include "harness/runner.h"

namespace fs = boost::filesystem;

namespace lockcheck {

std::pair<size_t, size_t> fault_timeline_match(const History& old_run, const History& new_run) {
  auto faults = [](const History& h) {
    std::vector<std::string> v;
    for (const auto& op : h) {
      if (op.process != kNemesis || !op.is_invoke()) continue;
      nlohmann::json key = {op.f, op.value.is_object() ? op.value.value("fault", nlohmann::json()) : nlohmann::json(),
                            op.value.is_object() ? op.value.value("targets", nlohmann::json()) : nlohmann::json()};
      v.push_back(key.dump());
    }
    return v;
  };
  auto a = faults(old_run), b = faults(new_run);
  size_t k = 0;
  while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
  return {k, a.size()};
}

int rerun(const std::string& run_dir, std::ostream& out) {
  RunConfig cfg = read_run_config(run_dir);
  cfg.results_dir = fs::path(run_dir).parent_path().string();
  if (cfg.results_dir.empty()) cfg.results_dir = ".";
  cfg.argv = {"lockcheck", "rerun", run_dir};
  RunOutcome o = run_test(cfg, out);
  if (o.run_dir.empty() || !fs::exists(o.run_dir + "/history.jsonl")) return o.exit_code;
  auto [matched, total] =
      fault_timeline_match(read_history(run_dir + "/history.jsonl"), read_history(o.run_dir + "/history.jsonl"));
  out << "rerun of " << run_dir << ": fault timeline matched " << matched << " of " << total
      << " faults (same action, fault and targets, in order)\n";
  if (fs::exists(o.run_dir + "/results.json")) {
    nlohmann::json r = read_json_file(o.run_dir + "/results.json");
    r["rerun"] = {{"of", run_dir}, {"faults_matched", matched}, {"faults", total}};
    write_json_file(o.run_dir + "/results.json", r);
  }
  return o.exit_code;
}

}  // namespace lockcheck
