#include "report/anomalies.h"

#include <algorithm>
#include <cstdlib>

namespace lockcheck {
namespace report {

namespace {

std::optional<int64_t> as_int(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d > -9.2e18 && d < 9.2e18) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

std::optional<Process> as_process(const nlohmann::json& v) {
  if (auto i = as_int(v); i && *i >= 0 && *i < (int64_t{1} << 31)) return static_cast<Process>(*i);
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (!s.empty() && (s[0] == 'p' || s[0] == 'P')) s.erase(0, 1);
    if (s.empty() || s.size() > 9 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    return static_cast<Process>(std::strtol(s.c_str(), nullptr, 10));
  }
  return std::nullopt;
}

std::string as_string(const nlohmann::json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::vector<Anomaly> anomalies_of(const nlohmann::json& results) {
  std::vector<Anomaly> out;
  if (!results.is_object()) return out;
  auto checkers = results.find("checkers");
  if (checkers == results.end() || !checkers->is_array()) return out;
  for (const auto& c : *checkers) {
    if (!c.is_object()) continue;
    const std::string checker = as_string(c, "checker");
    auto list = c.find("anomalies");
    if (list == c.end() || !list->is_array()) continue;
    for (const auto& a : *list) {
      if (!a.is_object()) continue;
      Anomaly an;
      an.number = out.size();
      an.checker = checker;
      an.kind = as_string(a, "kind");
      an.description = as_string(a, "description");
      an.key = as_string(a, "key");
      if (auto ops = a.find("ops"); ops != a.end() && ops->is_array()) {
        for (const auto& o : *ops) {
          if (auto i = as_int(o); i && *i >= 0) an.ops.push_back(*i);
        }
      }
      if (auto ps = a.find("processes"); ps != a.end() && ps->is_array()) {
        for (const auto& p : *ps) {
          if (auto pr = as_process(p)) an.processes.push_back(*pr);
        }
      }
      an.note = as_string(a, "severity") == "note";
      auto from = a.find("from_ns");
      auto to = a.find("to_ns");
      if (!an.note && from != a.end() && to != a.end()) {
        auto f = as_int(*from);
        auto t = as_int(*to);
        if (f && t) {
          an.from_ns = std::min(*f, *t);
          an.to_ns = std::max(*f, *t);
        }
      }
      out.push_back(std::move(an));
    }
  }
  return out;
}

std::string sentence_of(const Anomaly& a) {
  const std::string prefix = a.note ? "Note, not a violation: " : "";
  if (!a.description.empty()) return prefix + a.description;
  std::string s = a.kind.empty() ? "anomaly" : a.kind;
  if (!a.checker.empty()) s += " (" + a.checker + ")";
  return prefix + s;
}

}  // namespace report
}  // namespace lockcheck
