#include "checkers/checker.h"

namespace lockcheck {

const char* to_string(Validity v) {
  switch (v) {
    case Validity::kValid: return "valid";
    case Validity::kInvalid: return "invalid";
    case Validity::kUnknown: return "unknown";
  }
  return "unknown";
}

std::optional<Validity> validity_from_string(const std::string& s) {
  if (s == "valid") return Validity::kValid;
  if (s == "invalid") return Validity::kInvalid;
  if (s == "unknown") return Validity::kUnknown;
  return std::nullopt;
}

Validity merge(Validity a, Validity b) {
  if (a == Validity::kInvalid || b == Validity::kInvalid) return Validity::kInvalid;
  if (a == Validity::kUnknown || b == Validity::kUnknown) return Validity::kUnknown;
  return Validity::kValid;
}

void for_each_violation(const nlohmann::json& results,
                        const std::function<void(const nlohmann::json& checker, const nlohmann::json& anomaly)>& fn) {
  if (!results.is_object()) return;
  auto checkers = results.find("checkers");
  if (checkers == results.end() || !checkers->is_array()) return;
  for (const auto& c : *checkers) {
    if (!c.is_object() || c.value("valid", "") != "invalid") continue;
    auto anomalies = c.find("anomalies");
    if (anomalies == c.end() || !anomalies->is_array()) continue;
    for (const auto& a : *anomalies) {
      if (a.is_object() && a.value("severity", "") != "note") fn(c, a);
    }
  }
}

std::optional<int64_t> anomaly_time_ns(const nlohmann::json& a, const History* h) {
  if (!a.is_object()) return std::nullopt;
  for (const char* field : {"at_ns", "from_ns"}) {
    auto it = a.find(field);
    if (it != a.end() && it->is_number_integer()) return it->get<int64_t>();
  }
  auto ops = a.find("ops");
  if (h == nullptr || ops == a.end() || !ops->is_array()) return std::nullopt;
  std::optional<int64_t> t;
  for (const auto& i : *ops) {
    if (!i.is_number_integer()) continue;
    const int64_t k = i.get<int64_t>();
    if (k >= 0 && k < static_cast<int64_t>(h->size()) && (!t || (*h)[static_cast<size_t>(k)].time_ns > *t)) {
      t = (*h)[static_cast<size_t>(k)].time_ns;
    }
  }
  return t;
}

void to_json(nlohmann::json& j, const CheckResult& r) {
  j = nlohmann::json{{"checker", r.checker},
                     {"valid", to_string(r.valid)},
                     {"summary", r.summary},
                     {"anomalies", r.anomalies},
                     {"stats", r.stats}};
}

void from_json(const nlohmann::json& j, CheckResult& r) {
  r.checker = j.at("checker").get<std::string>();
  auto v = validity_from_string(j.at("valid").get<std::string>());
  if (!v) throw std::invalid_argument("checker verdict must be valid, invalid or unknown");
  r.valid = *v;
  r.summary = j.value("summary", "");
  r.anomalies = j.value("anomalies", nlohmann::json::array());
  r.stats = j.value("stats", nlohmann::json::object());
}

const std::vector<int64_t>& pairs_of(const History& h, const CheckOptions& opts, std::vector<int64_t>* scratch) {
  if (opts.pairs != nullptr && opts.pairs->size() == h.size()) return *opts.pairs;
  *scratch = pair_index(h);
  return *scratch;
}

CheckResult run_checker(const Checker& c, const History& h, const CheckOptions& opts) {
  try {
    CheckResult r = c.check(h, opts);
    r.checker = c.name();
    return r;
  } catch (const std::exception& e) {
    CheckResult r;
    r.checker = c.name();
    r.valid = Validity::kUnknown;
    r.summary = std::string("checker failed: ") + e.what();
    return r;
  }
}

std::unique_ptr<Checker> make_checker(const std::string& name) {
  for (const auto& c : checker_registry()) {
    if (name == c.name) return c.make();
  }
  return nullptr;
}

}  // namespace lockcheck
