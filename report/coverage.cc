#include "report/coverage.h"

#include <algorithm>
#include <sstream>

#include "checkers/coverage.h"
#include "checkers/first_anomaly.h"
#include "report/html.h"
#include "report/results_json.h"

namespace lockcheck {
namespace report {

namespace {

using nlohmann::json;

// Seconds to a precision that keeps the fault and the anomaly apart: 0.052 s, 3.25 s, 12.3 s.
std::string secs(const json& v) {
  if (!v.is_number()) return kDash;
  const double d = v.get<double>();
  return fixed(d, d < 1 ? 3 : d < 10 ? 2 : 1) + " s";
}

std::string str_or(const json& obj, const char* name, const std::string& otherwise) {
  const json* v = find(obj, name);
  return v && v->is_string() && !v->get<std::string>().empty() ? v->get<std::string>() : otherwise;
}

std::string joined(const json& arr) {
  if (!arr.is_array() || arr.empty()) return "";
  return plain(arr);
}

}  // namespace

std::string first_anomaly_text(const json& fa) {
  if (!fa.is_object()) return "";
  std::string s = "first anomaly";
  const json* at = find(fa, "at_s");
  if (at && at->is_number()) s += " at " + secs(*at);
  s += " (" + str_or(fa, "checker", "?") + ")";
  const json* f = find(fa, "fault_before");
  if (!f || !f->is_object()) return s + (at ? ": no fault before it" : "");
  s += ": after " + str_or(*f, "fault", "?");
  if (const json* t = find(*f, "targets"); t && !joined(*t).empty()) s += " on " + joined(*t);
  if (const json* st = find(*f, "start_s")) s += " at " + secs(*st);
  const json* in_force = find(*f, "in_force");
  if (in_force && in_force->is_boolean() && in_force->get<bool>()) {
    s += " (in force)";
  } else if (const json* z = find(*f, "healed_before_s"); z && z->is_number()) {
    s += " (healed " + secs(*z) + " before)";
  }
  const std::string state = str_or(*f, "lock_state", "");
  if (!state.empty()) s += "; the fault met the lock " + state;
  return s;
}

std::string first_anomaly_html(const json& results, const History& h, const std::vector<int64_t>& pairs) {
  json computed;
  const json* fa = find(results, "first_anomaly");
  if (!fa && !results.contains("first_anomaly")) {
    computed = first_anomaly(results, h, pairs);
    fa = &computed;
  }
  if (!fa || !fa->is_object()) return "";
  std::ostringstream s;
  s << "<p id=\"first-anomaly\" class=\"first-anomaly\">" << escape(first_anomaly_text(*fa));
  const json* at = find(*fa, "at_s");
  const json* f = find(*fa, "fault_before");
  const json* from = f ? find(*f, "start_s") : nullptr;
  if (at && at->is_number() && from && from->is_number()) {
    // The fault's start to the anomaly, with a tenth of that on either side.
    const double a = from->get<double>(), b = at->get<double>();
    const double pad = std::max(0.05, (b - a) / 10);
    s << " <button class=\"zoom-to\" id=\"first-anomaly-zoom\" data-scroll=\"1\" data-view-a=\""
      << fixed(std::max(0.0, a - pad) * 1000, 3) << "\" data-view-b=\"" << fixed((b + pad) * 1000, 3)
      << "\">show the fault and the anomaly on the timeline</button>";
  }
  s << "</p>\n";
  return s.str();
}

std::string never_met_words(const json& coverage) {
  const FaultCoverage c = coverage_from_json(coverage);
  std::string out;
  for (const auto& [fault, states] : c.never_met()) {
    if (states.empty()) continue;
    std::string list;
    for (const auto& st : states) list += (list.empty() ? "" : ", ") + st;
    out += (out.empty() ? "" : "; ") + fault + " never met " + list;
  }
  return out;
}

std::string coverage_table_html(const json& coverage, const std::string& id) {
  const FaultCoverage c = coverage_from_json(coverage);
  if (c.grid.empty()) return "";
  std::vector<std::string> columns = lock_states();
  bool unknown = false;
  for (const auto& [fault, states] : c.grid) unknown = unknown || states.count("unknown");
  if (unknown) columns.push_back("unknown");
  std::ostringstream s;
  s << "<table class=\"coverage\" id=\"" << escape(id) << "\"><tr><th>fault</th>";
  for (const auto& col : columns) s << "<th>" << escape(col) << "</th>";
  s << "<th>never met</th></tr>\n";
  const auto never = c.never_met();
  for (const auto& [fault, states] : c.grid) {
    s << "<tr data-fault=\"" << escape(fault) << "\"><td>" << escape(fault) << "</td>";
    for (const auto& col : columns) {
      auto it = states.find(col);
      const int64_t n = it == states.end() ? 0 : it->second;
      s << "<td" << (n == 0 && col != "unknown" ? " class=\"never\"" : "") << ">" << n << "</td>";
    }
    auto nm = never.find(fault);
    std::string words = nm == never.end() ? "not recorded" : nm->second.empty() ? "none" : "";
    if (nm != never.end()) {
      for (const auto& st : nm->second) words += (words.empty() ? "" : ", ") + st;
    }
    s << "<td>" << escape(words) << "</td></tr>\n";
  }
  s << "</table>\n";
  return s.str();
}

std::string fault_timing_section_html(const json& results, const History& h, const std::vector<int64_t>& pairs) {
  json computed;
  const json* cov = find(results, "coverage");
  if (!cov || !cov->is_object()) {
    computed = to_json(fault_coverage(h, pairs));
    cov = &computed;
  }
  const FaultCoverage c = coverage_from_json(*cov);
  if (c.faults == 0) return "";
  std::ostringstream s;
  s << "<section id=\"fault-timing\">\n<h2>Fault timing: what each fault met</h2>\n";
  s << "<p class=\"note\">Per fault, how many of its starts met the lock in each state (recorded by the nemesis "
       "as <code>lock_state</code>; \"unknown\": not recorded).</p>\n";
  s << coverage_table_html(*cov, "coverage-grid");
  const std::string never = never_met_words(*cov);
  s << "<p id=\"never-met\">"
    << (c.never_met().empty() ? std::string("No fault recorded the lock state it met (a run from before the field).")
        : never.empty()       ? std::string("Every fault met every lock state.")
                              : "Never met: " + escape(never) + ".")
    << "</p>\n";
  std::string timing;
  for (const auto& [t, n] : c.timing) timing += (timing.empty() ? "" : ", ") + std::to_string(n) + " " + t;
  s << "<p id=\"timing-used\">Timing: " << escape(timing) << "; " << c.fallbacks << " of " << c.faults
    << " faults fell back (<code>timing_fallback</code>: not timed as asked).</p>\n</section>\n";
  return s.str();
}

std::string matrix_fault_timing_html(const json& summary) {
  const json* cov = find(summary, "coverage");
  if (!cov || coverage_from_json(*cov).faults == 0) return "";
  std::ostringstream s;
  s << "<section id=\"fault-timing\"><h2>Fault timing: what each fault met</h2>\n<p class=\"note\">Over every run "
       "of the matrix: per fault, how many of its starts met the lock in each state.</p>\n"
    << coverage_table_html(*cov, "coverage-grid");
  const std::string never = never_met_words(*cov);
  if (!never.empty()) s << "<p id=\"never-met\">" << escape(never) << ".</p>\n";
  s << "<table class=\"entries\" id=\"coverage-entries\"><tr><th>entry</th><th>faults</th><th>never met</th>"
       "<th>timing</th><th>fell back</th></tr>\n";
  const json* entries = find(summary, "entries");
  for (const auto& e : entries && entries->is_array() ? *entries : json::array()) {
    const json* ec = find(e, "coverage");
    if (!ec) continue;
    const FaultCoverage c = coverage_from_json(*ec);
    if (c.faults == 0) continue;
    std::string timing;
    for (const auto& [t, n] : c.timing) timing += (timing.empty() ? "" : ", ") + std::to_string(n) + " " + t;
    const std::string words = never_met_words(*ec);
    s << "<tr><td>" << text(e, "name") << "</td><td>" << c.faults << "</td><td>"
      << escape(c.never_met().empty() ? std::string("not recorded") : words.empty() ? std::string("none") : words)
      << "</td><td>" << escape(timing) << "</td><td>" << c.fallbacks << "</td></tr>\n";
  }
  s << "</table></section>\n";
  return s.str();
}

}  // namespace report
}  // namespace lockcheck
