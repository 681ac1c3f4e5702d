#include "harness/rerun.h"

#include <boost/filesystem.hpp>
#include <optional>

#include "core/party.h"
#include "core/run_files.h"
#include "core/exit_codes.h"
#include "harness/plan.h"
#include "harness/reproduce.h"
#include "harness/runner.h"

namespace fs = boost::filesystem;

namespace lockcheck {

std::string fault_role(const Op& op) {
  const nlohmann::json targets =
      op.value.is_object() ? op.value.value("targets", nlohmann::json::array()) : nlohmann::json::array();
  const nlohmann::json detail =
      op.value.is_object() ? op.value.value("detail", nlohmann::json::object()) : nlohmann::json::object();
  const bool aimed = detail.is_object() && detail.value("aimed", false) == true;
  size_t clients = 0, nodes = 0;
  for (const auto& t : targets) {
    if (!t.is_string()) continue;
    const std::string s = t.get<std::string>();
    if (s.size() > 1 && s[0] == 'p') {
      ++clients;  // a client process
      continue;
    }
    auto p = Party::parse(s);
    if (!p) continue;
    if (p->is_client()) {
      ++clients;
    } else {
      ++nodes;
    }
  }
  if (clients == 0 && nodes == 0) return "none";
  if (nodes == 0) {
    if (aimed) return "holder";
    return clients > 1 ? "random clients" : "random client";
  }
  if (aimed) return clients ? "holder and holder's nodes" : "holder's nodes";
  return clients ? "random clients and nodes" : (nodes > 1 ? "random nodes" : "random node");
}

nlohmann::json fault_signature(const Op& op) {
  const nlohmann::json detail =
      op.value.is_object() ? op.value.value("detail", nlohmann::json::object()) : nlohmann::json::object();
  nlohmann::json mode = detail.is_object() && detail.contains("mode") ? detail["mode"] : nlohmann::json();
  return {{"f", op.f},
          {"fault", op.value.is_object() ? op.value.value("fault", nlohmann::json()) : nlohmann::json()},
          {"mode", mode},
          {"role", fault_role(op)}};
}

namespace {

std::vector<std::string> fault_signatures(const History& h) {
  std::vector<std::string> v;
  for (const auto& op : h) {
    if (op.process != kNemesis || !op.is_invoke()) continue;
    if (!op.value.is_object() || op.value.value("phase", "") != "start") continue;
    v.push_back(fault_signature(op).dump());
  }
  return v;
}

}  // namespace

std::pair<size_t, size_t> fault_timeline_match(const History& old_run, const History& new_run) {
  const auto a = fault_signatures(old_run), b = fault_signatures(new_run);
  // Longest common subsequence: a fault missing in the middle (cut by a holder wait) does not hide the rest.
  std::vector<std::vector<size_t>> lcs(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;) {
    for (size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  return {lcs[0][0], a.size()};
}

namespace {

// A minimal reproduction's folder (RUN/repro/, harness/reproduce.h): a case and its schedule, no history.
bool is_reproduction_folder(const std::string& dir) {
  return !fs::exists(dir + "/history.jsonl") && fs::exists(dir + "/tried.json") && fs::exists(dir + "/config.json");
}

// Fault starts (nemesis start ops) in h.
size_t fault_starts(const History& h) {
  size_t n = 0;
  for (const auto& op : h) {
    if (op.process == kNemesis && op.is_invoke() && op.value.is_object() && op.value.value("phase", "") == "start") ++n;
  }
  return n;
}

// After the run of a reproduction's case: whether its anomaly kind came back, and the faults that started.
nlohmann::json compare_with_reproduction(const std::string& repro_dir, const RunOutcome& o, const Schedule& schedule,
                                         std::ostream& out) {
  const nlohmann::json summary = read_json_file(repro_dir + "/tried.json").value("summary", nlohmann::json::object());
  const nlohmann::json a = summary.value("anomaly", nlohmann::json::object());
  const AnomalyKind target{a.value("checker", ""), a.value("kind", "")};
  const nlohmann::json minimal = summary.value("minimal", nlohmann::json::object());
  const History h = read_history(o.run_dir + "/history.jsonl");
  bool came_back = false;
  if (fs::exists(o.run_dir + "/results.json")) {
    for (const auto& seen : anomaly_kinds(read_json_file(o.run_dir + "/results.json"), &h)) {
      came_back = came_back || seen.kind == target;
    }
  }
  const size_t planned = fault_count(schedule), started = fault_starts(h);
  out << "rerun of the minimal reproduction " << repro_dir << ": anomaly " << target.str()
      << (came_back ? " came back" : " did not come back") << " (reproduce saw it in "
      << minimal.value("reproduced", 0) << " of " << minimal.value("tries", 0)
      << " tries, so one run may miss it); " << started << " of the schedule's " << planned << " faults started\n";
  return {{"of", repro_dir},       {"reproduction", true},       {"anomaly", target.str()},
          {"came_back", came_back}, {"faults_planned", planned}, {"faults_started", started}};
}

}  // namespace

int rerun(const std::string& run_dir_given, std::ostream& out, bool dry_run, bool no_progress) {
  std::string run_dir = run_dir_given;
  while (run_dir.size() > 1 && run_dir.back() == '/') run_dir.pop_back();
  const bool reproduction = is_reproduction_folder(run_dir);
  RunConfig cfg = read_run_config(run_dir);
  // Beside the stored run: the folder that holds it (for RUN/repro, the folder that holds RUN).
  fs::path results = fs::path(run_dir).parent_path();
  if (reproduction) results = results.parent_path();
  cfg.results_dir = results.empty() ? "." : results.string();
  cfg.argv = {"lockcheck", "rerun", run_dir};
  if (no_progress) cfg.progress = false;
  // The stored plan replayed: the same faults as the seed plans for an ordinary run, and the right ones for a
  // run that itself replayed a schedule (`run --schedule`, a minimal reproduction), whose seed would plan others.
  std::optional<Schedule> replay;
  if (fs::exists(run_dir + "/schedule.json")) {
    replay = read_schedule_file(run_dir + "/schedule.json");
    check_schedule_nemeses(*replay, cfg.nemesis, run_dir + "/schedule.json");
  } else if (reproduction) {
    throw ConfigError(run_dir + " has no schedule.json (a minimal reproduction's folder holds one)");
  }
  if (dry_run) {
    const Plan plan = resolve_plan(cfg);
    out << "rerun --dry-run: nothing started, nothing written\n"
        << "rerun of " << run_dir << (reproduction ? " (a minimal reproduction)" : "") << ": seed " << cfg.seed
        << (replay ? ", its schedule.json replayed (" + std::to_string(fault_count(*replay)) + " faults)" : "")
        << "; the new run goes to " << cfg.results_dir << "/\n";
    print_plan(plan, out);
    return kExitValid;
  }
  RunOutcome o = run_test(cfg, out, replay ? &*replay : nullptr);
  if (o.run_dir.empty() || !fs::exists(o.run_dir + "/history.jsonl")) return o.exit_code;
  nlohmann::json record;
  if (reproduction) {
    record = compare_with_reproduction(run_dir, o, *replay, out);
  } else {
    auto [matched, total] =
        fault_timeline_match(read_history(run_dir + "/history.jsonl"), read_history(o.run_dir + "/history.jsonl"));
    out << "rerun of " << run_dir << ": fault timeline matched " << matched << " of " << total
        << " faults (same action, fault, mode and aim: the holder, the holder's nodes, random ones; in order)\n";
    record = {{"of", run_dir}, {"faults_matched", matched}, {"faults", total}, {"matched_by", "role"}};
  }
  if (fs::exists(o.run_dir + "/results.json")) {
    nlohmann::json r = read_json_file(o.run_dir + "/results.json");
    r["rerun"] = record;
    write_json_file(o.run_dir + "/results.json", r);
  }
  return o.exit_code;
}

}  // namespace lockcheck
