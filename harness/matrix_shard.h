// A test-all matrix split across runners: `lockcheck test-all --shard K/N` runs a deterministic share of the
// matrix's runs (entries x seeds), and `lockcheck merge DIR...` joins the shards' folders into one JUnit file,
// one summary.html and one exit status, exactly as if one runner had run them all.
//
// The share: the matrix's runs in their order (entry by entry, seed by seed) are dealt round-robin: run i
// belongs to shard (i mod N) + 1. Same matrix, same N: same share on every machine.
//
// Every test-all folder (sharded or not) holds, besides junit.xml / summary.html:
//   matrix.json  the matrix file it ran (a copy)
//   shard.json   {"matrix": NAME, "shard": K, "shards": N, "runs": RUNS IN THIS SHARD}
//   jobs.jsonl   one line per finished run: {"entry", "seed", "exit_code", "seconds", "run_dir" (relative to
//                the test-all folder), "results" (the run's results.json, or null)}
// A shard of N > 1 judges nothing itself (an entry's seeds may be spread over shards): it prints its runs and
// exits 0 when every run ran (whatever its verdict), 3 when one could not run, 128+signal when interrupted.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockcheck {

struct ShardSpec {
  int k = 1;  // 1-based
  int n = 1;
  bool sharded() const { return n > 1; }
};

// "K/N" with 1 <= K <= N <= 1000; "" is 1/1. Throws ConfigError naming --shard.
ShardSpec parse_shard(const std::string& s);
// Whether run number i (0-based, in matrix order) belongs to the shard.
inline bool in_shard(size_t i, const ShardSpec& s) {
  return i % static_cast<size_t>(s.n) == static_cast<size_t>(s.k - 1);
}

// One finished run, as jobs.jsonl stores it.
struct JobRecord {
  std::string entry;
  uint64_t seed = 0;
  int exit_code = -1;
  double seconds = 0;
  std::string run_dir;     // as test-all knew it (absolute or relative to the working directory)
  nlohmann::json results;  // null when the run wrote none
};

// Recorded runs by (entry, seed): what `merge` hands to test_all instead of running anything.
class JobRecords {
 public:
  void add(JobRecord r) { records_[{r.entry, r.seed}] = std::move(r); }
  const JobRecord* find(const std::string& entry, uint64_t seed) const {
    auto it = records_.find({entry, seed});
    return it == records_.end() ? nullptr : &it->second;
  }
  size_t size() const { return records_.size(); }

 private:
  std::map<std::pair<std::string, uint64_t>, JobRecord> records_;
};

// Writes matrix.json (a copy of the matrix file test-all resolved from `matrix`) and shard.json into dir.
void write_shard_files(const std::string& dir, const std::string& matrix, const std::string& matrix_name,
                       const ShardSpec& shard, size_t runs);
// Appends one line to dir/jobs.jsonl (run_dir made relative to dir). Not thread-safe: callers serialise.
void append_job_record(const std::string& dir, const JobRecord& r);
// Reads dir/jobs.jsonl (run_dir resolved against dir). Throws ConfigError on a missing or broken file.
std::vector<JobRecord> read_job_records(const std::string& dir);

struct MergeOptions {
  std::vector<std::string> dirs;        // test-all folders of the shards
  std::string results_dir = "results";  // the merged folder goes here
  std::string junit_path;               // empty: in the merged folder
  std::string history;                  // --history DIR (harness/trend.h), as test-all's
  bool fail_on_trend = false;           // --fail-on-trend
  bool dry_run = false;                 // --dry-run: read and check the shards, write nothing
};

// `lockcheck merge`: checks the folders are shards of one matrix (same matrix.json, same N, no shard twice;
// a missing shard is reported and its runs count as not run), then judges every entry on the recorded runs
// and writes one junit.xml and summary.html. Returns test-all's exit status (0 all met, 1 otherwise).
// Throws ConfigError (exit 2) on folders that are not test-all shards of one matrix.
int merge_test_all(const MergeOptions& opts, std::ostream& out);

}  // namespace lockcheck
