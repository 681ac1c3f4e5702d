#include "harness/rerun.h"

#include <boost/filesystem.hpp>
#include <optional>

#include "core/party.h"
#include "core/run_files.h"
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

int rerun(const std::string& run_dir, std::ostream& out) {
  RunConfig cfg = read_run_config(run_dir);
  cfg.results_dir = fs::path(run_dir).parent_path().string();
  if (cfg.results_dir.empty()) cfg.results_dir = ".";
  cfg.argv = {"lockcheck", "rerun", run_dir};
  // The stored plan replayed: the same faults as the seed plans for an ordinary run, and the right ones for a
  // run that itself replayed a schedule (`run --schedule`, a minimal reproduction), whose seed would plan others.
  std::optional<Schedule> replay;
  if (fs::exists(run_dir + "/schedule.json")) {
    replay = read_schedule_file(run_dir + "/schedule.json");
    check_schedule_nemeses(*replay, cfg.nemesis, run_dir + "/schedule.json");
  }
  RunOutcome o = run_test(cfg, out, replay ? &*replay : nullptr);
  if (o.run_dir.empty() || !fs::exists(o.run_dir + "/history.jsonl")) return o.exit_code;
  auto [matched, total] =
      fault_timeline_match(read_history(run_dir + "/history.jsonl"), read_history(o.run_dir + "/history.jsonl"));
  out << "rerun of " << run_dir << ": fault timeline matched " << matched << " of " << total
      << " faults (same action, fault, mode and aim: the holder, the holder's nodes, random ones; in order)\n";
  if (fs::exists(o.run_dir + "/results.json")) {
    nlohmann::json r = read_json_file(o.run_dir + "/results.json");
    r["rerun"] = {{"of", run_dir}, {"faults_matched", matched}, {"faults", total}, {"matched_by", "role"}};
    write_json_file(o.run_dir + "/results.json", r);
  }
  return o.exit_code;
}

}  // namespace lockcheck
