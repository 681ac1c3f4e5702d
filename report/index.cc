// results/index.html: the test-all summaries and trends of a results folder, then every run, newest first, with
// its verdict and a link to its report.
#include <algorithm>
#include <sstream>
#include <vector>

#include <boost/filesystem.hpp>

#include "report/anomalies.h"
#include "report/assets.h"
#include "report/html.h"
#include "report/report.h"
#include "report/results_json.h"

namespace lockcheck {

using nlohmann::json;
using report::escape;
using report::find;
using report::kDash;
using report::parse_json_file;
using report::plain;
using report::verdict_of;
using report::write_atomically;

namespace {

struct IndexRow {
  std::string dir;         // folder name
  std::string started_at;  // ISO-8601, may be empty
  std::string lock, workload, nemesis;
  std::string verdict;  // valid / invalid / unknown / unreadable
  std::string problem;  // why unreadable
  size_t violations = 0, notes = 0;  // anomalies that are violations, and notes (listed, not violations)
  bool has_report = false;
};

// A test-all folder's summary (summary.json with entries: harness/night.h) or a trend folder (trend.json:
// harness/trend.h), as the index lists it.
struct PageRow {
  std::string dir, started_at, matrix, outcome, outcome_class, page;
  std::string trend_page;  // a test-all folder's trend.html (with --history), else empty
};

std::string json_text(const json& j, const char* name) {
  const json* v = find(j, name);
  return v ? plain(*v) : std::string();
}

}  // namespace

void write_index(const std::string& results_dir) {
  namespace fs = boost::filesystem;
  boost::system::error_code ec;
  if (!fs::is_directory(results_dir, ec)) throw ReportError(results_dir + ": not a folder");
  std::vector<IndexRow> rows;
  std::vector<PageRow> summaries, trends;
  fs::directory_iterator it(results_dir, ec), end;
  if (ec) throw ReportError(results_dir + ": cannot list (" + ec.message() + ")");
  for (; it != end; it.increment(ec)) {
    if (ec) throw ReportError(results_dir + ": cannot list (" + ec.message() + ")");
    const fs::path p = it->path();
    const fs::file_status st = fs::symlink_status(p, ec);
    if (ec || fs::is_symlink(st) || !fs::is_directory(st)) continue;  // `latest` is a symlink: not a run
    if (fs::is_regular_file(p / "summary.json", ec) && fs::is_regular_file(p / "summary.html", ec)) {
      PageRow row{p.filename().string(), "", "", "", "", "summary.html", ""};
      try {
        bool exists = false;
        const json j = parse_json_file((p / "summary.json").string(), &exists);
        row.started_at = json_text(j, "started_at");
        row.matrix = json_text(j, "matrix");
        const json* entries = find(j, "entries");
        const size_t n = entries && entries->is_array() ? entries->size() : 0;
        const std::string met = json_text(j, "met");
        row.outcome = met + " of " + std::to_string(n) + " expectations met";
        row.outcome_class = met == std::to_string(n) ? "met" : "missed";
      } catch (const std::exception& e) {
        row.outcome = std::string("unreadable: ") + e.what();
        row.outcome_class = "unreadable";
      }
      if (fs::is_regular_file(p / "trend.html", ec)) row.trend_page = "trend.html";
      summaries.push_back(std::move(row));
      continue;
    }
    if (fs::is_regular_file(p / "trend.json", ec) && fs::is_regular_file(p / "trend.html", ec)) {
      PageRow row{p.filename().string(), "", "", "", "", "trend.html", ""};
      try {
        bool exists = false;
        const json j = parse_json_file((p / "trend.json").string(), &exists);
        const json* nights = find(j, "nights");
        if (nights && nights->is_array() && !nights->empty()) {
          row.started_at = json_text(nights->back(), "started_at");
          row.matrix = json_text(nights->back(), "matrix");
        }
        const bool worse = j.value("worse", false);
        row.outcome = std::to_string(nights && nights->is_array() ? nights->size() : 0) + " nights, " +
                      (worse ? "something got worse" : "nothing got worse");
        row.outcome_class = worse ? "missed" : "met";
      } catch (const std::exception& e) {
        row.outcome = std::string("unreadable: ") + e.what();
        row.outcome_class = "unreadable";
      }
      trends.push_back(std::move(row));
      continue;
    }
    const std::string results_path = (p / "results.json").string();
    if (!fs::is_regular_file(results_path, ec)) continue;
    IndexRow row;
    row.dir = p.filename().string();
    row.has_report = fs::is_regular_file(p / "report.html", ec);
    try {
      bool exists = false;
      json results = parse_json_file(results_path, &exists);
      row.verdict = verdict_of(results);
      for (const auto& a : report::anomalies_of(results)) (a.note ? row.notes : row.violations) += 1;
      if (const json* s = find(results, "started_at"); s && s->is_string()) row.started_at = s->get<std::string>();
      json config = parse_json_file((p / "config.json").string(), &exists);
      auto field = [&](const char* name) {
        const json* v = find(config, name);
        if (!v) return std::string();
        if (v->is_array() && v->empty()) return std::string("none");
        return plain(*v);
      };
      row.lock = field("lock");
      row.workload = field("workload");
      row.nemesis = field("nemesis");
    } catch (const std::exception& e) {
      row.verdict = "unreadable";
      row.problem = e.what();
    }
    rows.push_back(std::move(row));
  }
  std::sort(rows.begin(), rows.end(), [](const IndexRow& a, const IndexRow& b) {
    if (a.started_at != b.started_at) return a.started_at > b.started_at;
    return a.dir > b.dir;
  });

  auto newest_first = [](const PageRow& a, const PageRow& b) {
    if (a.started_at != b.started_at) return a.started_at > b.started_at;
    return a.dir > b.dir;
  };
  std::sort(summaries.begin(), summaries.end(), newest_first);
  std::sort(trends.begin(), trends.end(), newest_first);

  std::ostringstream s;
  auto or_dash = [](const std::string& v) { return v.empty() ? std::string(kDash) : escape(v); };
  s << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>lockcheck runs</title>\n<style>"
    << report::kPageCss << "</style>\n</head>\n<body>\n<main>\n<h1>lockcheck runs</h1>\n";
  // The matrices' summaries and the trends first: what a reviewer opens in the morning.
  auto page_table = [&](const char* id, const char* title, const std::vector<PageRow>& list) {
    if (list.empty()) return;
    s << "<section><h2>" << title << "</h2>\n<table class=\"list\" id=\"" << id
      << "\"><tr><th>started</th><th>folder</th><th>matrix</th><th>outcome</th><th>pages</th></tr>\n";
    for (const auto& r : list) {
      const std::string base = report::url_path_encode(r.dir) + "/";
      s << "<tr><td>" << or_dash(r.started_at) << "</td><td class=\"mono\">" << escape(r.dir) << "</td><td>"
        << or_dash(r.matrix) << "</td><td class=\"" << escape(r.outcome_class) << "\">" << escape(r.outcome)
        << "</td><td><a href=\"" << escape(base + r.page) << "\">" << (r.page == "trend.html" ? "trend" : "summary")
        << "</a>";
      if (!r.trend_page.empty()) s << " &middot; <a href=\"" << escape(base + r.trend_page) << "\">trend</a>";
      s << "</td></tr>\n";
    }
    s << "</table></section>\n";
  };
  page_table("summaries", "Matrix summaries", summaries);
  page_table("trends", "Trends", trends);
  s << "<section><h2>Runs</h2>\n";
  size_t invalid = 0;
  for (const auto& r : rows) invalid += r.verdict == "invalid";
  s << "<p>" << rows.size() << (rows.size() == 1 ? " run" : " runs") << ", " << invalid
    << " invalid, newest first.</p>\n";
  s << "<table class=\"list\" "
       "id=\"runs\"><tr><th>started</th><th>run</th><th>lock</th><th>workload</th><th>nemesis</th>"
       "<th>verdict</th><th>violations</th><th>notes</th><th>report</th></tr>\n";
  for (const auto& r : rows) {
    const std::string href = report::url_path_encode(r.dir) + "/report.html";
    s << "<tr class=\"run\" data-run=\"" << escape(r.dir) << "\" data-verdict=\"" << escape(r.verdict) << "\"><td>"
      << or_dash(r.started_at) << "</td><td class=\"mono\">" << escape(r.dir) << "</td><td>" << or_dash(r.lock)
      << "</td><td>" << or_dash(r.workload) << "</td><td>" << or_dash(r.nemesis) << "</td><td class=\""
      << escape(r.verdict) << "\">" << escape(r.verdict);
    if (!r.problem.empty()) s << "<br/><span class=\"mono\">" << escape(r.problem) << "</span>";
    s << "</td><td>" << r.violations << "</td><td>" << r.notes << "</td><td>";
    if (r.has_report) {
      s << "<a href=\"" << escape(href) << "\">report</a>";
    } else {
      s << "<span title=\"lockcheck report " << escape(r.dir) << "\">not rendered</span>";
    }
    s << "</td></tr>\n";
  }
  s << "</table></section>\n</main>\n</body>\n</html>\n";
  write_atomically((fs::path(results_dir) / "index.html").string(), s.str());
}

}  // namespace lockcheck
