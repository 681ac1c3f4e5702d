// test-all --shard K/N and lockcheck merge: the share is deterministic and complete, and merging the shards of a
// tiny matrix gives the JUnit file (times aside) and exit status of the unsharded run.
#include "harness/matrix_shard.h"

#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/config.h"
#include "core/exit_codes.h"
#include "harness/cli.h"
#include "harness/matrix.h"
#include "tests/support/test_util.h"

namespace lockcheck {
namespace {

namespace fs = boost::filesystem;

TEST(MatrixShardTest, ParsesKOverN) {
  EXPECT_EQ(parse_shard("").n, 1);
  ShardSpec s = parse_shard("2/3");
  EXPECT_EQ(s.k, 2);
  EXPECT_EQ(s.n, 3);
  EXPECT_TRUE(s.sharded());
  EXPECT_FALSE(parse_shard("1/1").sharded());
  for (const char* bad : {"0/2", "3/2", "2", "/2", "1/", "a/b", "1/0", "-1/2", "1/2/3", "1/1001", " 1/2"}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--shard"), std::string::npos) << e.what();
    }
  }
}

TEST(MatrixShardTest, EveryRunIsInExactlyOneShard) {
  for (int n = 1; n <= 7; ++n) {
    for (size_t i = 0; i < 50; ++i) {
      int owners = 0;
      for (int k = 1; k <= n; ++k) owners += in_shard(i, ShardSpec{k, n});
      EXPECT_EQ(owners, 1) << "run " << i << " of " << n << " shards";
    }
  }
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The JUnit without its time attributes (wall times differ from run to run).
std::string without_times(const std::string& junit) {
  return std::regex_replace(junit, std::regex(" time=\"[^\"]*\""), "");
}

std::string only_test_all_dir(const std::string& results) {
  std::string found;
  for (auto& e : fs::directory_iterator(results)) {
    if (e.path().filename().string().rfind("test-all-", 0) == 0) {
      EXPECT_TRUE(found.empty()) << "two test-all folders in " << results;
      found = e.path().string();
    }
  }
  return found;
}

// A TTL far above any scheduling pause and short holds: the verdicts do not depend on the machine's load.
TEST(MatrixShardTest, TwoShardsMergedEqualTheUnshardedRun) {
  TempDir dir;
  const std::string file = dir.str() + "/tiny.json";
  std::ofstream(file)
      << R"({"name": "tiny", "defaults": {"time_limit_s": 2, "concurrency": 2, "ttl_ms": 5000, "hold_ms_max": 50},
    "entries": [{"name": "healthy", "seeds": 2, "expect": "valid"},
                {"name": "claimed-invalid", "expect": "invalid"},
                {"name": "redlock-healthy", "lock": "redlock", "nodes": 3, "expect": "valid"}]})";
  auto run = [&](const std::string& results, const std::string& shard) {
    TestAllOptions o;
    o.matrix = file;
    o.results_dir = results;
    o.shard = shard;
    o.parallel = 2;
    o.lockcheck_binary = LOCKCHECK_BINARY;
    std::ostringstream out;
    int code = test_all(o, out);
    return std::make_pair(code, out.str());
  };
  auto [whole_code, whole_out] = run(dir.str() + "/whole", "");
  EXPECT_EQ(whole_code, kExitInvalid) << whole_out;  // claimed-invalid misses
  const std::string whole_junit = read(only_test_all_dir(dir.str() + "/whole") + "/junit.xml");
  ASSERT_FALSE(whole_junit.empty());

  auto [c1, o1] = run(dir.str() + "/s1", "1/2");
  auto [c2, o2] = run(dir.str() + "/s2", "2/2");
  EXPECT_EQ(c1, kExitValid) << o1;  // shards judge nothing; every run ran
  EXPECT_EQ(c2, kExitValid) << o2;
  EXPECT_NE(o1.find("shard 1/2 of 4 runs"), std::string::npos) << o1;
  const std::string d1 = only_test_all_dir(dir.str() + "/s1"), d2 = only_test_all_dir(dir.str() + "/s2");
  EXPECT_FALSE(fs::exists(d1 + "/junit.xml"));

  std::ostringstream merged_out, err;
  int merged = cli_main({"merge", d2, d1, "--results", dir.str() + "/merged", "--junit", dir.str() + "/merged.xml"},
                        merged_out, err);
  EXPECT_EQ(merged, whole_code) << merged_out.str() << err.str();
  EXPECT_EQ(without_times(read(dir.str() + "/merged.xml")), without_times(whole_junit));
  const std::string md = only_test_all_dir(dir.str() + "/merged");
  const std::string summary = read(md + "/summary.html");
  EXPECT_NE(summary.find("3 expectations met"), std::string::npos) << summary.substr(0, 600);  // "2 of 3"
  EXPECT_NE(summary.find("report.html"), std::string::npos);  // links to the shards' runs
  // The night's head: a shard records when and with what it ran; the merge joins them (harness/night.h).
  const nlohmann::json h1 = read_json_file(d1 + "/summary.json"), merged_head = read_json_file(md + "/summary.json");
  EXPECT_EQ(h1.value("shard", ""), "1/2");
  EXPECT_FALSE(h1.contains("entries"));
  EXPECT_EQ(merged_head.value("started_at", ""),
            std::min(h1.value("started_at", ""), read_json_file(d2 + "/summary.json").value("started_at", "")));
  EXPECT_FALSE(merged_head.contains("started_at_note"));
  EXPECT_TRUE(merged_head["versions"].contains("redis")) << merged_head.dump();
  EXPECT_EQ(merged_head["entries"].size(), 3u);

  // One shard alone: its runs are judged, the other's count as not run; the merge says so.
  std::ostringstream half;
  EXPECT_EQ(cli_main({"merge", d1, "--results", dir.str() + "/half"}, half, err), kExitInvalid);
  EXPECT_NE(half.str().find("shard 2/2 of tiny is missing"), std::string::npos) << half.str();

  // Not shards of one matrix, or one shard twice: a usage error.
  std::ostringstream bad_out, bad_err;
  EXPECT_EQ(cli_main({"merge", d1, d1}, bad_out, bad_err), kExitUsage);
  EXPECT_NE(bad_err.str().find("given twice"), std::string::npos) << bad_err.str();
  EXPECT_EQ(cli_main({"merge", d1, only_test_all_dir(dir.str() + "/whole")}, bad_out, bad_err), kExitUsage);
  EXPECT_EQ(cli_main({"merge", dir.str()}, bad_out, bad_err), kExitUsage);
  EXPECT_EQ(cli_main({"merge"}, bad_out, bad_err), kExitUsage);
}

}  // namespace
}  // namespace lockcheck
