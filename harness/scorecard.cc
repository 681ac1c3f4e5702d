#include "harness/scorecard.h"

#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "core/exit_codes.h"
#include "core/run_files.h"
#include "harness/seed_search.h"
#include "report/html.h"

namespace lockcheck {

namespace fs = std::filesystem;

namespace {

size_t index_of(std::vector<std::string>& v, const std::string& s) {
  auto it = std::find(v.begin(), v.end(), s);
  if (it != v.end()) return static_cast<size_t>(it - v.begin());
  v.push_back(s);
  return v.size() - 1;
}

std::string seconds_text(double s) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << s << " s";
  return o.str();
}

// "invalid 3/5 (seeds 1, 2, 4), first after 2.3 s"
std::string cell_text(const ScorecardCell& c) {
  if (c.verdict.empty()) return "";
  std::ostringstream o;
  o << c.verdict;
  if (c.verdict == "error") {
    o << " (" << c.error_runs << "/" << c.runs << " runs failed or hung";
    if (!c.anomaly_seeds.empty()) o << "; " << c.anomaly_seeds.size() << " found an anomaly";
    o << ")";
    return o.str();
  }
  if (!c.anomaly_seeds.empty()) {
    o << " " << c.anomaly_seeds.size() << "/" << c.runs << " (seed";
    if (c.anomaly_seeds.size() > 1) o << "s";
    for (size_t i = 0; i < c.anomaly_seeds.size(); ++i) o << (i ? ", " : " ") << c.anomaly_seeds[i];
    o << ")";
    if (c.median_first_s >= 0) o << ", first after " << seconds_text(c.median_first_s);
  } else {
    o << " " << c.runs << "/" << c.runs;
  }
  return o.str();
}

// Adds one run's loss-notice stats (results.json) to f; a run without them adds nothing.
void add_loss_notices(const std::string& run_dir, LossNoticeFigures* f) {
  nlohmann::json results;
  try {
    results = read_json_file(run_dir + "/results.json");
  } catch (const std::exception&) {
    return;
  }
  for (const auto& c : results.value("checkers", nlohmann::json::array())) {
    if (c.value("checker", "") != "loss-notice") continue;
    const auto st = c.value("stats", nlohmann::json::object());
    if (!st.is_object()) return;
    ++f->runs;
    f->takeovers += st.value("takeovers", int64_t{0});
    f->warned_before += st.value("warned_before", int64_t{0});
    f->warned_after += st.value("warned_after", int64_t{0});
    f->never += st.value("never", int64_t{0});
    f->notices += st.value("notices", int64_t{0});
    for (const auto& l : st.value("lags_ms", nlohmann::json::array())) {
      if (l.is_number()) f->lags_ms.push_back(l.get<double>());
    }
    return;
  }
}

}  // namespace

double LossNoticeFigures::median_lag_ms() const {
  std::vector<double> v = lags_ms;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string loss_notice_text(const LossNoticeFigures& f) {
  if (f.runs == 0) return "";
  std::ostringstream o;
  if (f.takeovers == 0) {
    o << "no takeover (" << f.notices << " notice" << (f.notices == 1 ? "" : "s") << ")";
    return o.str();
  }
  if (!f.lags_ms.empty()) o << "median lag " << std::fixed << std::setprecision(1) << f.median_lag_ms() << " ms; ";
  o << f.takeovers << " takeover" << (f.takeovers == 1 ? "" : "s") << ": warned " << f.warned_before << " before, "
    << f.warned_after << " after, " << f.never << " never";
  if (f.notices == 0) o << " (the client reports no losses)";
  return o.str();
}

Scorecard build_scorecard(const Matrix& m, const std::vector<ScorecardRun>& runs) {
  Scorecard s;
  std::vector<std::pair<size_t, size_t>> where(m.entries.size(), {SIZE_MAX, SIZE_MAX});
  for (size_t i = 0; i < m.entries.size(); ++i) {
    const auto& e = m.entries[i];
    if (e.library.empty() || e.scenario.empty()) continue;
    where[i] = {index_of(s.rows, e.library), index_of(s.columns, e.scenario)};
  }
  s.cells.assign(s.rows.size(), std::vector<ScorecardCell>(s.columns.size()));
  s.loss_notices.assign(s.rows.size(), LossNoticeFigures{});
  std::vector<std::vector<std::vector<double>>> firsts(s.rows.size(),
                                                       std::vector<std::vector<double>>(s.columns.size()));
  for (const auto& r : runs) {
    if (r.entry >= where.size() || where[r.entry].first == SIZE_MAX) continue;
    auto [row, col] = where[r.entry];
    ScorecardCell& c = s.cells[row][col];
    ++c.runs;
    c.seeds.push_back(r.seed);
    c.run_dirs.push_back(r.run_dir);
    std::string v = r.exit_code == kExitValid     ? "valid"
                    : r.exit_code == kExitInvalid ? "invalid"
                    : r.exit_code == kExitUnknown ? "unknown"
                                                  : "error";
    if (v == "error") ++c.error_runs;
    if (!r.run_dir.empty()) add_loss_notices(r.run_dir, &s.loss_notices[row]);
    if (v == "invalid") {
      c.anomaly_seeds.push_back(r.seed);
      if (!r.run_dir.empty()) {
        try {
          if (auto ns = first_anomaly_ns(r.run_dir)) firsts[row][col].push_back(static_cast<double>(*ns) / 1e9);
        } catch (const std::exception&) {  // a run without readable results: no time for it
        }
      }
    }
    // The cell's verdict: error over invalid over unknown over valid.
    auto rank = [](const std::string& x) { return x == "error" ? 3 : x == "invalid" ? 2 : x == "unknown" ? 1 : 0; };
    if (c.verdict.empty() || rank(v) > rank(c.verdict)) c.verdict = v;
  }
  for (size_t r = 0; r < s.rows.size(); ++r) {
    for (size_t col = 0; col < s.columns.size(); ++col) {
      auto& f = firsts[r][col];
      if (f.empty()) continue;
      std::sort(f.begin(), f.end());
      const size_t n = f.size();
      s.cells[r][col].median_first_s = n % 2 ? f[n / 2] : (f[n / 2 - 1] + f[n / 2]) / 2;
    }
  }
  return s;
}

std::string scorecard_html(const Scorecard& s, const std::string& base) {
  if (s.empty()) return "";
  std::ostringstream o;
  o << "<h2>Scorecard: library &times; scenario</h2>\n<p>Each cell: the verdict over its seeds (invalid if any seed "
       "found an anomaly), the seeds that found one, the median time to the first anomaly, and the runs.</p>\n"
       "<table><tr><th>library</th>";
  for (const auto& c : s.columns) o << "<th>" << report::escape(c) << "</th>";
  o << "<th>loss notices</th></tr>\n";
  for (size_t r = 0; r < s.rows.size(); ++r) {
    o << "<tr><th>" << report::escape(s.rows[r]) << "</th>";
    for (size_t c = 0; c < s.columns.size(); ++c) {
      const ScorecardCell& cell = s.cells[r][c];
      const char* cls = cell.verdict == "valid" ? "met" : cell.verdict == "invalid" ? "missed" : "";
      o << "<td class=\"" << cls << "\">" << report::escape(cell_text(cell));
      for (size_t k = 0; k < cell.run_dirs.size(); ++k) {
        if (cell.run_dirs[k].empty()) continue;
        const std::string rel = fs::relative(fs::absolute(cell.run_dirs[k]) / "report.html", base).string();
        o << (k ? " " : "<br>") << "<a href=\"" << report::escape(rel) << "\">s" << cell.seeds[k] << "</a>";
      }
      o << "</td>";
    }
    o << "<td>" << report::escape(r < s.loss_notices.size() ? loss_notice_text(s.loss_notices[r]) : "") << "</td>";
    o << "</tr>\n";
  }
  o << "</table>\n";
  return o.str();
}

std::string scorecard_markdown(const Scorecard& s) {
  if (s.empty()) return "";
  std::ostringstream o;
  o << "| library |";
  for (const auto& c : s.columns) o << " " << c << " |";
  o << " loss notices |\n|---|";
  for (size_t c = 0; c < s.columns.size(); ++c) o << "---|";
  o << "---|\n";
  for (size_t r = 0; r < s.rows.size(); ++r) {
    o << "| " << s.rows[r] << " |";
    for (size_t c = 0; c < s.columns.size(); ++c) o << " " << cell_text(s.cells[r][c]) << " |";
    o << " " << (r < s.loss_notices.size() ? loss_notice_text(s.loss_notices[r]) : "") << " |\n";
  }
  return o.str();
}

}  // namespace lockcheck
