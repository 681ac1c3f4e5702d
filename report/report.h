// The HTML report of a run and the index of all runs. The report is one self-contained file (inline CSS, SVG
// and a small script for hover and zoom; nothing from the network), readable without the rest of the run
// folder: verdict and anomalies first, then the configuration and the command that reruns it, the lock
// timeline, the operations around each anomaly, latency/throughput/lost-update plots, and the nodes.
// Every string from the history, the config or the results is HTML-escaped.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/op.h"

namespace lockcheck {

// Bad input for the report (a malformed file, a missing run folder). what() names the file.
class ReportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Renders the report page. config: config.json (a RunConfig as JSON); results: results.json. Both are read
// leniently: any field may be missing or of an unexpected type (shown as "—"); neither needs to be an object.
// Pure: no I/O. Thread-safe. pairs: pair_index(h) when the caller has it (computed here otherwise).
std::string render_report(const nlohmann::json& config, const History& h, const nlohmann::json& results,
                          const std::vector<int64_t>* pairs = nullptr);

// Reads run_dir/config.json, run_dir/history.jsonl and run_dir/results.json and writes run_dir/report.html
// (via a temporary file and a rename, so a reader never sees half a report). A missing file counts as empty
// (a run that stopped before its checkers ran still gets a report), but not all three. Throws ReportError
// naming the file when one is malformed or the report cannot be written.
void write_report(const std::string& run_dir);
// The same with the history already in memory (read once by `check` or `run`): history.jsonl is not read again.
void write_report(const std::string& run_dir, const History& h, const std::vector<int64_t>* pairs = nullptr);

// Writes results_dir/index.html: the test-all folders (summary.json and summary.html: matrix, when, how many
// expectations met, links to the summary and its trend) and trend folders (trend.json), newest first; then every
// run folder (a subfolder with a results.json; symlinks such as `latest` are skipped) newest first, with time,
// lock, workload, nemesis, verdict, violations and notes counted apart, and a link to its report. A run whose files are malformed is listed as unreadable rather than failing the index. Throws
// ReportError when results_dir cannot be read or index.html cannot be written.
void write_index(const std::string& results_dir);

}  // namespace lockcheck
