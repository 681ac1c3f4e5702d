#include "report/results_json.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "checkers/checker.h"
#include "checkers/coverage.h"
#include "checkers/first_anomaly.h"
#include "core/op.h"
#include "core/run_files.h"
#include "report/html.h"
#include "report/report.h"

namespace lockcheck {
namespace report {

using nlohmann::json;

const char* const kDash = "\xE2\x80\x94";  // "—"

const json* find(const json& obj, const char* name) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// A JSON value as plain text (not escaped): strings as they are, numbers and booleans printed, arrays joined.
std::string plain(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d == std::floor(d) && std::fabs(d) < 1e15) return report::fixed(d, 0);
    std::string s = report::fixed(d, 3);
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  if (v.is_number()) return v.dump();
  if (v.is_array()) {
    std::string s;
    for (const auto& e : v) {
      if (!s.empty()) s += ", ";
      s += plain(e);
    }
    return s;
  }
  if (v.is_null()) return "";
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The field as escaped text, or "—" when it is missing or empty.
std::string text(const json& obj, const char* name) {
  const json* v = find(obj, name);
  if (!v) return kDash;
  std::string s = plain(*v);
  return s.empty() ? std::string(kDash) : escape(s);
}

std::string verdict_of(const json& results) {
  if (const json* v = find(results, "valid"); v && v->is_string()) {
    if (auto parsed = validity_from_string(v->get<std::string>())) return to_string(*parsed);
  }
  // No overall verdict: merge the checkers'; none at all is unknown.
  const json* checkers = find(results, "checkers");
  if (!checkers || !checkers->is_array() || checkers->empty()) return "unknown";
  Validity merged = Validity::kValid;
  for (const auto& c : *checkers) {
    const json* v = find(c, "valid");
    auto parsed = v && v->is_string() ? validity_from_string(v->get<std::string>()) : std::nullopt;
    merged = merge(merged, parsed.value_or(Validity::kUnknown));
  }
  return to_string(merged);
}

std::string read_file(const std::string& path, bool* exists) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *exists = false;
    return "";
  }
  *exists = true;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw ReportError(path + ": cannot read");
  return ss.str();
}

json parse_json_file(const std::string& path, bool* exists) {
  const std::string text = read_file(path, exists);
  if (!*exists) return json::object();
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e400
    throw ReportError(path + ": not valid JSON (" + e.what() + ")");
  }
}

void add_first_anomaly_and_coverage(json& results, const History& h, const std::vector<int64_t>* pairs) {
  if (!results.is_object()) return;
  std::vector<int64_t> own;
  if (pairs == nullptr || pairs->size() != h.size()) {
    own = pair_index(h);
    pairs = &own;
  }
  results["first_anomaly"] = first_anomaly(results, h, *pairs);
  results["coverage"] = to_json(fault_coverage(h, *pairs));
}

void write_atomically(const std::string& path, const std::string& content) {
  try {
    write_file_atomically(path, content);
  } catch (const RunFileError& e) {
    throw ReportError(e.what());
  }
}

}  // namespace report
}  // namespace lockcheck
