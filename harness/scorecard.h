// The library x scenario scorecard of `lockcheck test-all` (harness/matrix/libraries.json): matrix entries that
// name a "library" (the row) and a "scenario" (the column) are laid out as a table whose cells give the verdict
// over the entry's seeds, the seeds that found an anomaly, the median time to the first anomaly and links to
// the runs. Written into summary.html (HTML) and scorecard.md (Markdown, for the README).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/matrix.h"

namespace lockcheck {

// One finished run of a matrix entry.
struct ScorecardRun {
  size_t entry = 0;
  uint64_t seed = 0;
  int exit_code = -1;
  std::string run_dir;  // empty when the run left none
};

struct ScorecardCell {
  std::string verdict;                  // valid, invalid, unknown, error, or "" (no entry)
  std::vector<uint64_t> anomaly_seeds;  // seeds whose run found an anomaly
  size_t runs = 0;
  size_t error_runs = 0;              // runs that failed (exit 2, 3, or killed by the matrix's watchdog)
  std::vector<std::string> run_dirs;  // in seed order
  std::vector<uint64_t> seeds;
  double median_first_s = -1;  // median time to the first anomaly over the anomalous seeds; -1: none
};

// A library's loss notices over all its runs (the loss-notice checker's stats in each run's results.json): how
// timely it warned a holder whose lock another process acquired.
struct LossNoticeFigures {
  size_t runs = 0;  // runs with a loss-notice result
  int64_t takeovers = 0, warned_before = 0, warned_after = 0, never = 0, notices = 0;
  std::vector<double> lags_ms;  // every warned takeover's lag (notice - the other acquire)
  double median_lag_ms() const;  // REQUIRES: !lags_ms.empty()
};

struct Scorecard {
  std::vector<std::string> rows, columns;         // in the matrix's order of first appearance
  std::vector<std::vector<ScorecardCell>> cells;  // [row][column]
  std::vector<LossNoticeFigures> loss_notices;    // [row]
  bool empty() const { return rows.empty(); }
};

// The loss-notice column's text for a library: "median lag 12.0 ms; 6 takeovers: warned 2 before, 3 after, 1
// never", "no takeover (4 notices)", or "" when no run judged loss notices.
std::string loss_notice_text(const LossNoticeFigures& f);

// The time to the first anomaly comes from each invalid run's results.json (first_anomaly_ns).
Scorecard build_scorecard(const Matrix& m, const std::vector<ScorecardRun>& runs);
// The table as HTML (links relative to base, the summary's folder) and as Markdown.
std::string scorecard_html(const Scorecard& s, const std::string& base);
std::string scorecard_markdown(const Scorecard& s);

}  // namespace lockcheck
