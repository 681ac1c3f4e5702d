// `lockcheck test-all`: a matrix of configurations, each with the verdict it must reach; one exit status for
// the whole matrix, JUnit XML and an HTML summary for CI. Also the seed search of `lockcheck run --seeds N`
// and `lockcheck rerun`.
//
// A matrix file is JSON:
//   {"name": "quick",
//    "defaults": {"time_limit_s": 10, "concurrency": 5},          // any config.json field
//    "entries": [
//      {"name": "single-healthy", "lock": "single", "expect": "valid"},
//      {"name": "single-client-pause", "lock": "single", "nemesis": ["client-pause"], "time": 20,
//       "seeds": 3, "expect": "invalid"},
//      {"name": "fenced-set-pause", "workload": "fenced-set", "nemesis": ["client-pause"],
//       "expect": {"lost-updates": "valid", "fencing": "valid"}}]}
// Entry fields: name (required, unique; letters, digits, '-', '_', '.'), expect (required: "valid",
// "invalid", or an object checker -> verdict), seeds (a count N: seeds 1..N, or a list of seeds; default 1),
// time (alias of time_limit_s), min_found (see below), library and scenario (a scorecard row and column,
// harness/scorecard.h), note (free text for people: what the expectation rests on; not a run setting), and any
// config.json field.
// Expectations: "valid" holds when every seed's run is valid; "invalid" when at least min_found seeds' runs
// found an anomaly (default 1: anomalies are probabilistic, more seeds, more chances; a findings matrix sets
// e.g. 9 of 10 to demand that the anomaly be found reliably); "valid" allows max_found seeds that are not valid
// (default 0; e.g. 2 of 10 says an anomaly is rare, against another entry's min_found that says it is common).
// Per checker likewise. A run that fails (cluster
// error, exit 2 or 3) fails its entry whatever was expected. Each entry's finding also gives the median time
// to the first anomaly over the seeds that found one.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkers/checker.h"
#include "core/config.h"

namespace lockcheck {

struct MatrixEntry {
  std::string name;
  RunConfig config;  // defaults + the entry's fields
  std::vector<uint64_t> seeds;
  std::optional<Validity> expect;                                 // the run's verdict, or
  std::vector<std::pair<std::string, Validity>> expect_checkers;  // per checker
  size_t min_found = 1;           // an "invalid" expectation needs this many seeds to find it (1 .. seeds.size())
  size_t max_found = 0;           // a "valid" one allows this many seeds not to be valid (0 .. seeds.size() - 1)
  std::string library, scenario;  // the scorecard's row and column (harness/scorecard.h); empty: not in it
};

struct Matrix {
  std::string name;
  std::vector<MatrixEntry> entries;
};

// Parses a matrix; throws ConfigError naming the entry and field.
Matrix parse_matrix(const nlohmann::json& j, const std::string& results_dir);
// Reads FILE, or a shipped matrix by name ("default", "quick": harness/matrix/NAME.json in the source tree,
// PREFIX/share/lockcheck/matrix/NAME.json installed; harness/install_layout.h).
Matrix load_matrix(const std::string& file_or_name, const std::string& results_dir);
// The file load_matrix reads for file_or_name: itself when it holds a '/' or a '.', else the shipped matrix.
std::string matrix_path(const std::string& file_or_name);

class JobRecords;  // harness/matrix_shard.h

struct TestAllOptions {
  std::string matrix = "default";
  std::string junit_path;  // empty: <summary dir>/junit.xml
  int parallel = 1;
  std::string results_dir = "results";
  std::string lockcheck_binary;        // the binary that runs each entry (default: this one)
  std::string shard;                   // --shard K/N: run only that share (harness/matrix_shard.h); "" all
  const JobRecords* replay = nullptr;  // `lockcheck merge`: take each run from here instead of running it
  nlohmann::json replay_night;         // `lockcheck merge`: the shards' started_at, duration_s, versions, cores
  std::string history;                 // --history DIR: earlier test-all folders; the summary opens with the trend
  bool fail_on_trend = false;          // --fail-on-trend: exit 1 also when the trend got worse
  bool dry_run = false;                // --dry-run: load and resolve the matrix, print its entries and runs
};

// One seed's run as an entry's judgement sees it.
struct SeedRun {
  uint64_t seed = 0;
  int exit_code = -1;
  nlohmann::json results;                 // results.json (null when the run wrote none)
  std::optional<double> first_anomaly_s;  // when it found an anomaly: the time of the first (of the
                                          // checkers expected invalid, when the entry names checkers)
};
struct EntryJudgement {
  bool met = false;
  bool error = false;   // a run failed (exit 2 or 3): the entry fails whatever was expected
  std::string finding;  // one line: expected, found (counts, median time to the first anomaly, the first one)
  size_t found = 0;     // seeds whose runs found an anomaly in what the entry is about (its checkers expected
                        // invalid, when it names any; else the run's verdict)
  std::vector<double> first_anomaly_s;  // of those seeds, the times to the first anomaly that are known
};
// Whether e's expectation holds over its seeds' runs. Pure.
EntryJudgement judge_entry(const MatrixEntry& e, const std::vector<SeedRun>& runs);

// What "changed config" compares between nights (harness/trend.h): the entry's run configuration (without what
// names this run or this machine: results folder, label, seed, argv, an adapter's command line) plus its seeds,
// expect and min_found.
nlohmann::json entry_settings(const MatrixEntry& e);

// Runs every entry, prints expected vs found per entry, writes JUnit XML, summary.html and summary.json (what
// `lockcheck trend` reads: harness/night.h, the entries judged). With a history it also writes trend.json and
// trend.html beside them (harness/trend.h) and opens the summary with "Since the last nights".
// Returns 0 when every entry met its expectation, 1 otherwise (also when the trend got worse, with
// fail_on_trend), 2 on a bad history (before anything runs), 3 when the matrix could not run at all.
int test_all(const TestAllOptions& opts, std::ostream& out);

// Seed search and rerun: harness/seed_search.h, harness/rerun.h.

}  // namespace lockcheck
