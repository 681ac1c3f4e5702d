// `lockcheck trend DIR...`: what changed over the last nights of a matrix, told apart from noise.
//
// Each DIR is a judged test-all folder (an unsharded `test-all`, or the folder `merge` writes); what it judged
// is in its summary.json (harness/matrix.h). The nights are ordered by their own start time (summary.json's
// started_at; a tie keeps the order given), the last one is "tonight". Per entry (matched by name) and night:
// found k of n seeds (the seeds whose runs found an anomaly in what the entry is about), the expectation met or
// not, the median time to the first anomaly. Tonight is compared with the previous night and with the pooled
// earlier nights (every night before tonight, seeds added up):
//   new / gone                 in tonight and not the previous night, or the other way round
//   expectation newly unmet    met the previous night, not tonight (newly met: the other way round)
//   weaker / stronger          found rate lower / higher, two-sided Fisher exact test p < alpha
//   slower / faster            the median time to the first anomaly moved by more than the seeds' spread: the
//                              larger of the two sides' ranges (max - min of the seeds' first-anomaly times),
//                              each side with at least 4 times (with 2, two samples of one distribution trip
//                              the rule 22% of the time; with 4, 1.3%)
//   changed config             the entry's settings (run configuration, seeds, expectation) differ from the
//                              previous night's: the fields that differ are named
// Versions: each night's summary.json names what it ran with; the trend names the versions that changed
// between the previous night and tonight next to every entry that moved.
// Exit status: 1 when something got worse tonight (expectation newly unmet, or weaker against either side),
// else 0; 2 on bad input (not a judged test-all folder, an unreadable summary, one night given twice), and
// then nothing is written.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockcheck {

// Two-sided Fisher exact test on the 2x2 table found / not found x night A / night B: the sum of the
// hypergeometric probabilities (Boost.Math) of every table with the same margins that is no more likely than the one
// observed (relative tolerance 1e-7). REQUIRES: found_a <= n_a, found_b <= n_b. 1 when either n is 0.
double fisher_exact_two_sided(size_t found_a, size_t n_a, size_t found_b, size_t n_b);

// One entry of one night, as its summary.json records it.
struct NightEntry {
  std::string name;
  nlohmann::json settings;  // the run configuration plus seeds, expect, min_found: what "changed config" compares
  size_t n = 0, found = 0;
  bool met = false, error = false;
  std::vector<double> first_anomaly_s;  // per seed that found an anomaly and has a time
  nlohmann::json coverage;              // which lock state its faults met (checkers/coverage.h); null: not recorded
};

struct Night {
  std::string dir;    // as given
  std::string label;  // the folder's name
  std::string matrix, started_at;
  double duration_s = 0;
  nlohmann::json versions = nlohmann::json::object();  // name -> version text
  std::vector<NightEntry> entries;
  nlohmann::json coverage;  // over the whole matrix (summary.json's "coverage"); null: not recorded
};

// Reads a judged test-all folder's summary.json. Throws ConfigError naming the folder on anything else.
Night read_night(const std::string& dir);
// The same from summary.json's contents j (dir: the folder named in messages and recorded in the night).
Night night_from_json(const nlohmann::json& j, const std::string& dir);

struct TrendChange {
  std::string kind;         // new, gone, expectation newly unmet, expectation newly met, weaker, stronger, slower,
                            // faster, changed config
  std::string against;      // "previous night" or "earlier nights"
  std::optional<double> p;  // weaker / stronger: the Fisher test's p
  std::string detail;       // one line: the numbers, or the fields that differ
  bool worse() const { return kind == "expectation newly unmet" || kind == "weaker"; }
};

struct EntryTrend {
  std::string name;
  std::vector<const NightEntry*> nights;  // per night in order; nullptr where the entry was not in it
  std::vector<TrendChange> changes;       // tonight's
  bool worse() const;
};

struct Trend {
  std::vector<Night> nights;  // oldest first
  double alpha = 0.05;
  std::vector<EntryTrend> entries;           // in tonight's order, then entries gone from it
  std::vector<std::string> version_changes;  // "redsync v4.18.1 -> v4.19.0", previous night to tonight
  bool worse() const;
};

// Orders the nights (by started_at, stably), rejects one night given twice (the same folder, or the same
// matrix and start), and computes every entry's changes. Pure; throws ConfigError on bad input.
// Note: the returned Trend's EntryTrend::nights point into its own `nights`; do not copy a Trend.
std::unique_ptr<Trend> compute_trend(std::vector<Night> nights, double alpha);

nlohmann::json trend_json(const Trend& t);
// A whole page (the shared stylesheet, no external assets, the same bytes for the same nights).
std::string trend_html(const Trend& t);
// The "Since the last nights" section of a test-all summary: the entries that changed, worst first, and a
// link to trend.html beside it (with only tonight: says that the history has no earlier night).
std::string trend_summary_section(const Trend& t, const std::string& trend_href);
// The same as text lines for the console.
void print_trend(const Trend& t, std::ostream& out);
// Per night, oldest first: each entry's median time to the first anomaly, and the lock states no fault of the
// matrix met (checkers/coverage.h; "not recorded" for a night from before the field). `lockcheck trend` prints it.
void print_trend_nights(const Trend& t, std::ostream& out);

struct TrendOptions {
  std::vector<std::string> dirs;
  std::string out_dir;  // empty: <results_dir>/trend-<time>
  std::string results_dir = "results";
  double alpha = 0.05;
  bool dry_run = false;  // --dry-run: read the nights and compute the trend, write nothing
};
// `lockcheck trend`: reads, computes, writes trend.json and trend.html, prints the changes. Returns 0 / 1 as
// above; throws ConfigError (exit 2) on bad input before writing anything.
int trend_command(const TrendOptions& o, std::ostream& out);

// How many nights --history shows (the grid's columns): tonight and the 29 before it.
inline constexpr size_t kHistoryNights = 30;

// The judged test-all folders of matrix `matrix` ("" any) directly under `history` (shards, other matrices and
// other folders skipped), the newest `keep` of them, oldest first. Throws ConfigError naming --history when
// `history` is not a folder or one of its judged test-all folders is unreadable.
std::vector<Night> read_history_nights(const std::string& history, const std::string& matrix, size_t keep);

}  // namespace lockcheck
