// The nightly workflow end to end on real runs: three short nights of a one-entry matrix, each
// test-all given the earlier ones as --history; the third changes the entry under the same name (no fault,
// expected valid). Its summary opens with "Since the last nights", its exit status stays the expectations'
// (0), `lockcheck trend` over the three folders names the changed config and exits 1 when the found rate
// dropped significantly, and `merge --history --fail-on-trend` of the third night's folder exits 1 with it.
#include <gtest/gtest.h>

#include <boost/filesystem.hpp>
#include <fstream>
#include <sstream>

#include "core/config.h"
#include "core/exit_codes.h"
#include "harness/cli.h"
#include "harness/matrix.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

namespace fs = boost::filesystem;

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The test-all folders under results, oldest first (their names carry the start time).
std::vector<std::string> test_all_dirs(const std::string& results) {
  std::vector<std::string> dirs;
  for (auto& e : fs::directory_iterator(results)) {
    if (e.path().filename().string().rfind("test-all-", 0) == 0) dirs.push_back(e.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

int cli(const std::vector<std::string>& args, std::string* out) {
  std::ostringstream o, e;
  const int rc = cli_main(args, o, e);
  *out = o.str() + e.str();
  return rc;
}

TEST(NightlyTest, ThreeNightsWithHistoryThenTheTrend) {
  TempDir dir;
  const std::string results = dir.file("results");
  // The holder paused for twice the TTL (client-pause, aimed): a double grant every seed finds. Night 3: the
  // same entry name without the fault, a TTL far above any scheduling pause, expected valid.
  const std::string paused = dir.file("nightly.json"), changed = dir.file("nightly-changed.json");
  std::ofstream(paused) << R"({"name": "nightly", "defaults": {"time_limit_s": 4, "concurrency": 3, "ttl_ms": 500,
    "nemesis_interval_s": 1},
    "entries": [{"name": "single-pause", "nemesis": ["client-pause"], "nemesis_targeting": "holder", "seeds": 4,
                 "expect": "invalid"}]})";
  std::ofstream(changed) << R"({"name": "nightly", "defaults": {"time_limit_s": 2, "concurrency": 3, "ttl_ms": 5000,
    "hold_ms_max": 50},
    "entries": [{"name": "single-pause", "seeds": 4, "expect": "valid"}]})";
  auto night = [&](const std::string& matrix, bool history) {
    TestAllOptions o;
    o.matrix = matrix;
    o.results_dir = results;
    o.parallel = 4;
    o.lockcheck_binary = LOCKCHECK_BINARY;
    if (history) o.history = results;
    std::ostringstream out;
    const int code = test_all(o, out);
    // test-all folders are named to the second: the next night starts in another second
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    return std::make_pair(code, out.str());
  };
  auto [c1, o1] = night(paused, false);
  ASSERT_EQ(c1, kExitValid) << o1;
  auto [c2, o2] = night(paused, true);
  ASSERT_EQ(c2, kExitValid) << o2;
  EXPECT_NE(o2.find("since the last nights (1 earlier)"), std::string::npos) << o2;
  auto [c3, o3] = night(changed, true);
  EXPECT_EQ(c3, kExitValid) << "--history alone leaves the exit status to the expectations\n" << o3;
  const auto dirs = test_all_dirs(results);
  ASSERT_EQ(dirs.size(), 3u);
  const std::string summary = read(dirs[2] + "/summary.html");
  EXPECT_NE(summary.find("Since the last nights"), std::string::npos);
  EXPECT_LT(summary.find("Since the last nights"), summary.find("class=\"entries\""));
  EXPECT_NE(summary.find("changed config"), std::string::npos);
  EXPECT_TRUE(fs::exists(dirs[2] + "/trend.html"));
  // Each night records what it ran with.
  const nlohmann::json head = read_json_file(dirs[0] + "/summary.json");
  EXPECT_NE(head["versions"].value("lockcheck", "").find("git "), std::string::npos) << head.dump();
  EXPECT_TRUE(head["versions"].contains("redis")) << head.dump();
  EXPECT_GE(head.value("cores", 0), 1);

  size_t earlier_found = 0;
  for (int i = 0; i < 2; ++i)
    earlier_found += read_json_file(dirs[i] + "/summary.json")["entries"][0].value("found", 0);
  std::string out;
  const int trend = cli({"trend", dirs[2], dirs[0], dirs[1], "--out", dir.file("trend")}, &out);
  EXPECT_NE(out.find("changed config"), std::string::npos) << out;
  EXPECT_NE(out.find("nemesis [\"client-pause\"] -> []"), std::string::npos) << out;
  const nlohmann::json t = read_json_file(dir.file("trend/trend.json"));
  ASSERT_EQ(t["nights"].size(), 3u);
  EXPECT_EQ(t["nights"][2]["label"], fs::path(dirs[2]).filename().string());  // ordered by start
  // 0 of 4 tonight against 8 of 8 earlier: Fisher p = 0.002; 7 of 8: p = 0.01 (6 of 8 would be p = 0.06).
  std::cout << "[ figures ] earlier nights found " << earlier_found << " of 8; trend exit " << trend << "\n"
            << out << std::endl;
  if (earlier_found >= 7) {
    EXPECT_EQ(trend, 1) << out;
    EXPECT_NE(out.find("weaker (against the earlier nights)"), std::string::npos) << out;
    // merge of the third night's folder again: the same night, judged on its recorded runs; the trend makes
    // the exit status only with --fail-on-trend.
    EXPECT_EQ(cli({"merge", dirs[2], "--results", dir.file("m1"), "--history", results}, &out), kExitValid) << out;
    EXPECT_EQ(cli({"merge", dirs[2], "--results", dir.file("m2"), "--history", results, "--fail-on-trend"}, &out),
              kExitInvalid)
        << out;
  } else {
    ADD_FAILURE() << "the aimed client pause found the anomaly in only " << earlier_found << " of 8 runs";
  }
}

}  // namespace
}  // namespace lockcheck
