#include "checkers/coverage.h"

#include <algorithm>

#include "checkers/first_anomaly.h"

namespace lockcheck {

const std::vector<std::string>& lock_states() {
  static const std::vector<std::string> states = {"free",      "acquiring", "held-early",
                                                  "held-late", "renewing",  "releasing"};
  return states;
}

namespace {

std::string known_or_unknown(const nlohmann::json& detail, const char* field,
                             const std::vector<std::string>& allowed) {
  auto it = detail.find(field);
  if (it == detail.end() || !it->is_string()) return "unknown";
  const std::string v = it->get<std::string>();
  return std::find(allowed.begin(), allowed.end(), v) != allowed.end() ? v : "unknown";
}

}  // namespace

std::map<std::string, std::vector<std::string>> FaultCoverage::never_met() const {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [fault, states] : grid) {
    bool known = false;
    for (const auto& [state, n] : states) known = known || (state != "unknown" && n > 0);
    if (!known) continue;
    std::vector<std::string>& missing = out[fault];
    for (const std::string& s : lock_states()) {
      auto it = states.find(s);
      if (it == states.end() || it->second == 0) missing.push_back(s);
    }
  }
  return out;
}

void FaultCoverage::add(const FaultCoverage& o) {
  for (const auto& [fault, states] : o.grid) {
    for (const auto& [state, n] : states) grid[fault][state] += n;
  }
  for (const auto& [t, n] : o.timing) timing[t] += n;
  fallbacks += o.fallbacks;
  faults += o.faults;
}

FaultCoverage fault_coverage(const History& h) { return fault_coverage(h, pair_index(h)); }

FaultCoverage fault_coverage(const History& h, const std::vector<int64_t>& pairs) {
  static const std::vector<std::string> timings = {"random", "lock-state"};
  FaultCoverage c;
  for (const FaultStart& s : fault_starts(h, pairs)) {
    ++c.faults;
    ++c.grid[s.fault][known_or_unknown(s.detail, "lock_state", lock_states())];
    ++c.timing[known_or_unknown(s.detail, "timing", timings)];
    if (s.detail.contains("timing_fallback") && !s.detail["timing_fallback"].is_null()) ++c.fallbacks;
  }
  return c;
}

nlohmann::json to_json(const FaultCoverage& c) {
  nlohmann::json grid = nlohmann::json::object();
  for (const auto& [fault, states] : c.grid) {
    for (const auto& [state, n] : states) grid[fault][state] = n;
  }
  nlohmann::json never = nlohmann::json::object();
  for (const auto& [fault, states] : c.never_met()) never[fault] = states;
  nlohmann::json timing = nlohmann::json::object();
  for (const auto& [t, n] : c.timing) timing[t] = n;
  return {{"faults", c.faults}, {"grid", grid}, {"never_met", never}, {"timing", timing}, {"fallbacks", c.fallbacks}};
}

FaultCoverage coverage_from_json(const nlohmann::json& j) {
  FaultCoverage c;
  if (!j.is_object()) return c;
  auto count = [](const nlohmann::json& v) { return v.is_number_integer() ? v.get<int64_t>() : int64_t{0}; };
  if (auto g = j.find("grid"); g != j.end() && g->is_object()) {
    for (const auto& [fault, states] : g->items()) {
      if (!states.is_object()) continue;
      for (const auto& [state, n] : states.items()) c.grid[fault][state] += count(n);
    }
  }
  if (auto t = j.find("timing"); t != j.end() && t->is_object()) {
    for (const auto& [k, n] : t->items()) c.timing[k] += count(n);
  }
  if (auto f = j.find("fallbacks"); f != j.end()) c.fallbacks = count(*f);
  if (auto f = j.find("faults"); f != j.end()) c.faults = count(*f);
  return c;
}

}  // namespace lockcheck
