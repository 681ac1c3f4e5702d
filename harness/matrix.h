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
// time (alias of time_limit_s), library and scenario (a scorecard row and column, harness/scorecard.h), and any
// config.json field.
// Expectations: "valid" holds when every seed's run is valid; "invalid" when at least one seed's run found an
// anomaly (anomalies are probabilistic; more seeds, more chances). Per checker likewise. A run that fails
// (cluster error, exit 2 or 3) fails its entry whatever was expected.
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
  RunConfig config;                              // defaults + the entry's fields
  std::vector<uint64_t> seeds;
  std::optional<Validity> expect;                // the run's verdict, or
  std::vector<std::pair<std::string, Validity>> expect_checkers;  // per checker
  std::string library, scenario;  // the scorecard's row and column (harness/scorecard.h); empty: not in it
};

struct Matrix {
  std::string name;
  std::vector<MatrixEntry> entries;
};

// Parses a matrix; throws ConfigError naming the entry and field.
Matrix parse_matrix(const nlohmann::json& j, const std::string& results_dir);
// Reads FILE, or a shipped matrix by name ("default", "quick": harness/matrix/NAME.json).
Matrix load_matrix(const std::string& file_or_name, const std::string& results_dir);

class JobRecords;  // harness/matrix_shard.h

struct TestAllOptions {
  std::string matrix = "default";
  std::string junit_path;          // empty: <summary dir>/junit.xml
  int parallel = 1;
  std::string results_dir = "results";
  std::string lockcheck_binary;    // the binary that runs each entry (default: this one)
  std::string shard;               // --shard K/N: run only that share (harness/matrix_shard.h); "" all
  const JobRecords* replay = nullptr;  // `lockcheck merge`: take each run from here instead of running it
};

// Runs every entry, prints expected vs found per entry, writes JUnit XML and summary.html.
// Returns 0 when every entry met its expectation, 1 otherwise (3 when the matrix could not run at all).
int test_all(const TestAllOptions& opts, std::ostream& out);

// Seed search and rerun: harness/seed_search.h, harness/rerun.h.

}  // namespace lockcheck
