// The library x scenario scorecard (harness/scorecard.h) from hand-made matrix entries and run outcomes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "harness/scorecard.h"
#include "tests/support/lock_test_util.h"

namespace lockcheck {
namespace {

MatrixEntry entry(const std::string& library, const std::string& scenario) {
  MatrixEntry e;
  e.name = library + "-" + scenario;
  e.library = library;
  e.scenario = scenario;
  return e;
}

// A run folder whose results.json has one anomaly starting at from_s.
std::string anomalous_run(const std::string& root, const std::string& name, double from_s) {
  const std::string dir = root + "/" + name;
  std::filesystem::create_directories(dir);
  nlohmann::json r = {{"valid", "invalid"},
                      {"checkers",
                       {{{"checker", "mutex"},
                         {"valid", "invalid"},
                         {"anomalies", {{{"from_ns", static_cast<int64_t>(from_s * 1e9)}}}}}}}};
  std::ofstream(dir + "/results.json") << r.dump();
  return dir;
}

TEST(Scorecard, LaysOutLibrariesByScenarioWithSeedsAndMedianTimeToFirst) {
  TempDir tmp;
  Matrix m;
  m.entries = {entry("redsync", "healthy"), entry("redsync", "kill"), entry("single", "healthy"),
               entry("single", "kill")};
  MatrixEntry plain;  // not in the scorecard
  plain.name = "other";
  m.entries.push_back(plain);
  std::vector<ScorecardRun> runs = {
      {0, 1, 0, ""},
      {0, 2, 0, ""},
      {1, 1, 1, anomalous_run(tmp.path(), "a", 2.0)},
      {1, 2, 0, ""},
      {1, 3, 1, anomalous_run(tmp.path(), "b", 4.0)},
      {2, 1, 0, ""},
      {2, 2, 4, ""},
      {3, 1, 3, ""},
      {4, 1, 1, ""},
  };
  Scorecard s = build_scorecard(m, runs);
  ASSERT_EQ(s.rows, (std::vector<std::string>{"redsync", "single"}));
  ASSERT_EQ(s.columns, (std::vector<std::string>{"healthy", "kill"}));
  EXPECT_EQ(s.cells[0][0].verdict, "valid");
  EXPECT_EQ(s.cells[0][0].runs, 2u);
  EXPECT_EQ(s.cells[0][1].verdict, "invalid");
  EXPECT_EQ(s.cells[0][1].anomaly_seeds, (std::vector<uint64_t>{1, 3}));
  EXPECT_DOUBLE_EQ(s.cells[0][1].median_first_s, 3.0);
  EXPECT_EQ(s.cells[1][0].verdict, "unknown");  // one seed could not decide: not valid
  EXPECT_EQ(s.cells[1][1].verdict, "error");
  EXPECT_EQ(s.cells[1][1].error_runs, 1u);
  const std::string md = scorecard_markdown(s);
  EXPECT_NE(md.find("| library | healthy | kill |"), std::string::npos) << md;
  EXPECT_NE(md.find("invalid 2/3 (seeds 1, 3), first after 3.0 s"), std::string::npos) << md;
  EXPECT_NE(md.find("valid 2/2"), std::string::npos) << md;
  EXPECT_NE(md.find("error (1/1 runs failed or hung)"), std::string::npos) << md;
  const std::string html = scorecard_html(s, tmp.path());
  EXPECT_NE(html.find("href=\"a/report.html\">s1</a>"), std::string::npos) << html;
}

TEST(Scorecard, NoLibraryEntriesNoTable) {
  Matrix m;
  MatrixEntry e;
  e.name = "x";
  m.entries.push_back(e);
  Scorecard s = build_scorecard(m, {{0, 1, 0, ""}});
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(scorecard_html(s, "."), "");
  EXPECT_EQ(scorecard_markdown(s), "");
}

}  // namespace
}  // namespace lockcheck
