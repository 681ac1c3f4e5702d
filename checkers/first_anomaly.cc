#include "checkers/first_anomaly.h"

#include <map>

#include "checkers/checker.h"

namespace lockcheck {

namespace {

bool describes_fault(const nlohmann::json& v) {
  return v.is_object() && v.contains("fault") && v["fault"].is_string() && v.contains("phase") &&
         v["phase"].is_string();
}

double to_s(int64_t ns) { return static_cast<double>(ns) / 1e9; }

std::optional<int64_t> int_field(const nlohmann::json& obj, const char* name) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace

std::vector<FaultStart> fault_starts(const History& h) { return fault_starts(h, pair_index(h)); }

std::vector<FaultStart> fault_starts(const History& h, const std::vector<int64_t>& pairs) {
  std::vector<FaultStart> starts;
  std::map<std::string, std::vector<size_t>> open;  // fault -> indices into starts of its unhealed faults
  for (size_t i = 0; i < h.size(); ++i) {
    const Op& op = h[i];
    if (op.process != kNemesis || op.is_invoke() || op.is_fail()) continue;
    const Op* inv = i < pairs.size() && pairs[i] >= 0 && static_cast<size_t>(pairs[i]) < h.size()
                        ? &h[static_cast<size_t>(pairs[i])]
                        : nullptr;
    const nlohmann::json* v = describes_fault(op.value) ? &op.value
                              : inv && describes_fault(inv->value) ? &inv->value
                                                                  : nullptr;
    if (!v) continue;
    // The invoke's detail, then the completion's over it.
    nlohmann::json detail = nlohmann::json::object();
    for (const Op* o : {inv, &op}) {
      if (!o || !o->value.is_object()) continue;
      auto d = o->value.find("detail");
      if (d == o->value.end() || !d->is_object()) continue;
      for (const auto& [k, x] : d->items()) detail[k] = x;
    }
    const std::string fault = (*v)["fault"].get<std::string>();
    const std::string phase = (*v)["phase"].get<std::string>();
    if (phase == "start") {
      FaultStart s;
      s.step = int_field(detail, "step");
      s.fault = fault;
      s.f = op.f.str();
      if (auto t = v->find("targets"); t != v->end() && t->is_array()) {
        for (const auto& x : *t) s.targets.push_back(x.is_string() ? x.get<std::string>() : x.dump());
      }
      s.start_ns = op.time_ns;
      s.detail = std::move(detail);
      s.index = op.index;
      starts.push_back(std::move(s));
      open[fault].push_back(starts.size() - 1);
    } else if (phase == "stop") {
      auto& mine = open[fault];
      const std::optional<int64_t> of = int_field(detail, "start_step");
      // A client fault arms slots (its targets: c0 ..) and its stop names the processes it hit (detail "paused"
      // or "crashed": [{"process": 3, ...}]): those are what the fault was.
      std::vector<std::string> hit;
      for (const char* k : {"paused", "crashed"}) {
        auto l = detail.find(k);
        if (l == detail.end() || !l->is_array()) continue;
        for (const auto& x : *l) {
          if (auto p = int_field(x, "process")) hit.push_back(process_name(static_cast<Process>(*p)));
        }
      }
      for (auto it = mine.begin(); it != mine.end();) {
        if (!of || starts[*it].step == of) {
          starts[*it].healed_ns = op.time_ns;
          if (!hit.empty()) {
            starts[*it].armed = std::move(starts[*it].targets);
            starts[*it].targets = hit;
          }
          it = mine.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  return starts;
}

nlohmann::json first_anomaly(const nlohmann::json& results, const History& h) {
  return first_anomaly(results, h, pair_index(h));
}

nlohmann::json first_anomaly(const nlohmann::json& results, const History& h, const std::vector<int64_t>& pairs) {
  const nlohmann::json* best_checker = nullptr;
  const nlohmann::json* best = nullptr;
  std::optional<int64_t> best_t;
  for_each_violation(results, [&](const nlohmann::json& c, const nlohmann::json& a) {
    const std::optional<int64_t> t = anomaly_time_ns(a, &h);
    if (!best || (t && (!best_t || *t < *best_t))) {
      best_checker = &c;
      best = &a;
      best_t = t;
    }
  });
  if (!best && results.is_object()) {
    // An invalid checker that lists no violation: the checker itself.
    auto checkers = results.find("checkers");
    if (checkers != results.end() && checkers->is_array()) {
      for (const auto& c : *checkers) {
        if (c.is_object() && c.value("valid", "") == "invalid") {
          best_checker = &c;
          break;
        }
      }
    }
  }
  if (!best_checker) return nullptr;

  auto str = [](const nlohmann::json* obj, const char* name) -> nlohmann::json {
    if (!obj || !obj->is_object()) return nullptr;
    auto it = obj->find(name);
    return it != obj->end() && it->is_string() ? *it : nlohmann::json();
  };
  nlohmann::json out = {{"at_s", best_t ? nlohmann::json(to_s(*best_t)) : nlohmann::json()},
                        {"at_ns", best_t ? nlohmann::json(*best_t) : nlohmann::json()},
                        {"checker", str(best_checker, "checker")},
                        {"kind", str(best, "kind")},
                        {"description", str(best, "description")},
                        {"summary", str(best_checker, "summary")},
                        {"fault_before", nullptr}};
  if (!best_t) return out;

  const FaultStart* before = nullptr;
  const std::vector<FaultStart> starts = fault_starts(h, pairs);
  for (const FaultStart& s : starts) {
    if (s.start_ns <= *best_t && (!before || s.start_ns >= before->start_ns)) before = &s;
  }
  if (!before) return out;
  const bool in_force = !before->healed_ns || *before->healed_ns > *best_t;
  nlohmann::json f = {
      {"step", before->step ? nlohmann::json(*before->step) : nlohmann::json()},
      {"fault", before->fault},
      {"f", before->f},
      {"targets", before->targets},
      {"armed", before->armed.empty() ? nlohmann::json() : nlohmann::json(before->armed)},
      {"start_s", to_s(before->start_ns)},
      {"in_force", in_force},
      {"healed_s", before->healed_ns ? nlohmann::json(to_s(*before->healed_ns)) : nlohmann::json()},
      {"healed_before_s", in_force ? nlohmann::json() : nlohmann::json(to_s(*best_t - *before->healed_ns))}};
  for (const char* field : {"timing", "lock_state", "timing_fallback"}) {
    auto it = before->detail.find(field);
    if (it != before->detail.end() && it->is_string()) f[field] = *it;
  }
  out["fault_before"] = std::move(f);
  return out;
}

}  // namespace lockcheck
