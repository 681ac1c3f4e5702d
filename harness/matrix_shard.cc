#include "harness/matrix_shard.h"

#include <algorithm>
#include <boost/filesystem.hpp>
#include <fstream>
#include <optional>
#include <set>

#include "core/config.h"
#include "core/json_int.h"
#include "harness/matrix.h"
#include "harness/night.h"

namespace fs = boost::filesystem;

namespace lockcheck {

namespace {

// One night's head from its shards': the earliest start, the latest finish, the span between, the versions
// joined, the cores (one number when the shards agree, else each shard's).
nlohmann::json merged_night(const std::vector<nlohmann::json>& heads) {
  std::optional<std::time_t> first, last;
  std::vector<nlohmann::json> versions;
  std::set<unsigned> cores;
  for (const auto& h : heads) {
    if (auto t = parse_iso_utc(h.value("started_at", ""))) first = first ? std::min(*first, *t) : *t;
    if (auto t = parse_iso_utc(h.value("finished_at", ""))) last = last ? std::max(*last, *t) : *t;
    versions.push_back(h.value("versions", nlohmann::json::object()));
    if (h.contains("cores") && h["cores"].is_number_unsigned()) cores.insert(h["cores"].get<unsigned>());
  }
  nlohmann::json night = nlohmann::json::object();
  if (first) night["started_at"] = iso_utc(*first);
  if (last) night["finished_at"] = iso_utc(*last);
  if (first && last) night["duration_s"] = static_cast<double>(*last - *first);
  night["versions"] = join_versions(versions);
  if (cores.size() == 1) {
    night["cores"] = *cores.begin();
  } else if (!cores.empty()) {
    night["cores"] = nlohmann::json(std::vector<unsigned>(cores.begin(), cores.end())).dump();
  }
  night["shards_read"] = heads.size();
  return night;
}

}  // namespace

ShardSpec parse_shard(const std::string& s) {
  ShardSpec spec;
  if (s.empty()) return spec;
  const auto slash = s.find('/');
  auto number = [&](const std::string& part) {
    if (part.empty() || part.size() > 4 || part.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(part);
  };
  if (slash == std::string::npos || (spec.k = number(s.substr(0, slash))) < 1 ||
      (spec.n = number(s.substr(slash + 1))) < 1 || spec.n > 1000 || spec.k > spec.n) {
    throw ConfigError("--shard: '" + s + "' is not K/N with 1 <= K <= N <= 1000 (e.g. 2/4)");
  }
  return spec;
}

void write_shard_files(const std::string& dir, const std::string& matrix, const std::string& matrix_name,
                       const ShardSpec& shard, size_t runs) {
  fs::copy_file(matrix_path(matrix), fs::path(dir) / "matrix.json", fs::copy_option::overwrite_if_exists);
  std::ofstream(dir + "/shard.json")
      << nlohmann::json{{"matrix", matrix_name}, {"shard", shard.k}, {"shards", shard.n}, {"runs", runs}}.dump(2)
      << "\n";
}

void append_job_record(const std::string& dir, const JobRecord& r) {
  std::string rel;
  if (!r.run_dir.empty()) rel = fs::relative(fs::absolute(r.run_dir), fs::absolute(dir)).string();
  std::ofstream(dir + "/jobs.jsonl", std::ios::app)
      << nlohmann::json{{"entry", r.entry},     {"seed", r.seed}, {"exit_code", r.exit_code},
                        {"seconds", r.seconds}, {"run_dir", rel}, {"results", r.results}}
             .dump()
      << "\n";
}

std::vector<JobRecord> read_job_records(const std::string& dir) {
  std::vector<JobRecord> out;
  const std::string path = dir + "/jobs.jsonl";
  std::ifstream in(path);
  if (!in) return out;  // a shard whose runs all failed to start, or none finished
  std::string line;
  size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    try {
      nlohmann::json j = nlohmann::json::parse(line);
      JobRecord r;
      r.entry = j.at("entry").get<std::string>();
      const std::optional<uint64_t> seed = json_integer<uint64_t>(j.at("seed"));
      const std::optional<int> exit_code = json_integer<int>(j.at("exit_code"));
      if (!seed) throw std::runtime_error("\"seed\" is not an integer >= 0");
      if (!exit_code) throw std::runtime_error("\"exit_code\" is not an integer");
      r.seed = *seed;
      r.exit_code = *exit_code;
      r.seconds = j.at("seconds").get<double>();
      const std::string rel = j.at("run_dir").get<std::string>();
      if (!rel.empty()) r.run_dir = (fs::path(dir) / rel).lexically_normal().string();
      r.results = j.value("results", nlohmann::json());
      out.push_back(std::move(r));
    } catch (const std::exception& e) {
      throw ConfigError(path + ":" + std::to_string(n) + ": not a run record (" + e.what() + ")");
    }
  }
  return out;
}

int merge_test_all(const MergeOptions& opts, std::ostream& out) {
  if (opts.dirs.empty()) throw ConfigError("merge: give the test-all folders of the shards (DIR...)");
  nlohmann::json matrix;
  std::string matrix_name;
  int shards = 0;
  std::set<int> seen;
  JobRecords records;
  std::vector<nlohmann::json> heads;  // the shards' summary.json (when, what they ran with)
  for (const auto& dir : opts.dirs) {
    if (!fs::exists(dir + "/shard.json")) {
      throw ConfigError("merge: " + dir + " is not a test-all folder (no shard.json)");
    }
    nlohmann::json info = read_json_file(dir + "/shard.json");
    nlohmann::json m = read_json_file(dir + "/matrix.json");
    int k = info.value("shard", 0), n = info.value("shards", 0);
    if (matrix.is_null()) {
      matrix = m;
      matrix_name = info.value("matrix", "");
      shards = n;
    } else if (m != matrix) {
      throw ConfigError("merge: " + dir + " ran a different matrix than " + opts.dirs.front());
    } else if (n != shards) {
      throw ConfigError("merge: " + dir + " is shard " + std::to_string(k) + "/" + std::to_string(n) + ", but " +
                        opts.dirs.front() + " was split in " + std::to_string(shards));
    }
    if (!seen.insert(k).second) throw ConfigError("merge: shard " + std::to_string(k) + " given twice (" + dir + ")");
    for (auto& r : read_job_records(dir)) records.add(std::move(r));
    if (fs::exists(dir + "/summary.json")) heads.push_back(read_json_file(dir + "/summary.json"));
  }
  for (int k = 1; k <= shards; ++k) {
    if (!seen.count(k)) {
      out << "merge: shard " << k << "/" << shards << " of " << matrix_name
          << " is missing: its runs count as not run\n";
    }
  }
  if (opts.dry_run) {
    const Matrix m = parse_matrix(matrix, opts.results_dir);  // resolved as test-all will
    size_t runs = 0;
    for (const auto& e : m.entries) runs += e.seeds.size();
    out << "merge --dry-run: nothing written\n"
        << "shards: " << seen.size() << " of " << shards << " of " << matrix_name << " (" << opts.dirs.size()
        << " folders), " << records.size() << " recorded runs of the matrix's " << runs << "\n"
        << "matrix: " << m.entries.size() << " entries, judged as test-all judges them\n";
    if (!opts.history.empty()) {
      out << "history: " << opts.history << (opts.fail_on_trend ? " (--fail-on-trend)" : "") << "\n";
    }
    out << "would write: " << opts.results_dir << "/test-all-" << m.name << "-TIME/ (junit.xml"
        << (opts.junit_path.empty() ? "" : " at " + opts.junit_path) << ", summary.html, summary.json)\n";
    return 0;
  }
  // The merged matrix file, then test-all on the recorded runs (it runs nothing).
  fs::create_directories(opts.results_dir);
  const std::string merged_matrix = (fs::path(opts.results_dir) / ("merge-" + matrix_name + ".matrix.json")).string();
  std::ofstream(merged_matrix) << matrix.dump(2) << "\n";
  out << "merge: " << opts.dirs.size() << " folder(s), " << records.size() << " recorded runs\n";
  TestAllOptions t;
  t.matrix = merged_matrix;
  t.results_dir = opts.results_dir;
  t.junit_path = opts.junit_path;
  t.replay = &records;
  t.replay_night = merged_night(heads);
  t.history = opts.history;
  t.fail_on_trend = opts.fail_on_trend;
  const int status = test_all(t, out);
  fs::remove(merged_matrix);
  return status;
}

}  // namespace lockcheck
