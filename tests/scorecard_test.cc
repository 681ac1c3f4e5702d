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

// The loss-notice column: each library's takeovers and lags over all its runs (the loss-notice checker's stats).
TEST(Scorecard, LossNoticesPerLibraryOverItsRuns) {
  TempDir tmp;
  auto run_with = [&](const std::string& name, nlohmann::json stats) {
    const std::string dir = tmp.path() + "/" + name;
    std::filesystem::create_directories(dir);
    nlohmann::json r = {{"valid", "valid"},
                        {"checkers", {{{"checker", "loss-notice"}, {"valid", "valid"}, {"stats", stats}}}}};
    std::ofstream(dir + "/results.json") << r.dump();
    return dir;
  };
  Matrix m;
  m.entries = {entry("rueidislock", "healthy"), entry("rueidislock", "kill"), entry("redis-py", "kill")};
  std::vector<ScorecardRun> runs = {
      {0, 1, 0, run_with("h", {{"takeovers", 0}, {"notices", 2}, {"lags_ms", nlohmann::json::array()}})},
      {1, 1, 1,
       run_with("k1", {{"takeovers", 2}, {"warned_before", 1}, {"warned_after", 1}, {"never", 0}, {"notices", 2},
                       {"lags_ms", {-4.0, 10.0}}})},
      {1, 2, 1,
       run_with("k2", {{"takeovers", 2}, {"warned_before", 0}, {"warned_after", 1}, {"never", 1}, {"notices", 1},
                       {"lags_ms", {30.0}}})},
      {2, 1, 1, run_with("p", {{"takeovers", 3}, {"never", 3}, {"notices", 0}})},
  };
  Scorecard s = build_scorecard(m, runs);
  ASSERT_EQ(s.loss_notices.size(), 2u);
  EXPECT_EQ(s.loss_notices[0].runs, 3u);
  EXPECT_EQ(s.loss_notices[0].takeovers, 4);
  EXPECT_DOUBLE_EQ(s.loss_notices[0].median_lag_ms(), 10.0);
  EXPECT_EQ(loss_notice_text(s.loss_notices[0]), "median lag 10.0 ms; 4 takeovers: warned 1 before, 2 after, 1 never");
  EXPECT_EQ(loss_notice_text(s.loss_notices[1]),
            "3 takeovers: warned 0 before, 0 after, 3 never (the client reports no losses)");
  const std::string md = scorecard_markdown(s);
  EXPECT_NE(md.find("| library | healthy | kill | loss notices |"), std::string::npos) << md;
  EXPECT_NE(md.find("median lag 10.0 ms"), std::string::npos) << md;
  EXPECT_NE(scorecard_html(s, tmp.path()).find("<th>loss notices</th>"), std::string::npos);
  LossNoticeFigures none;
  EXPECT_EQ(loss_notice_text(none), "");
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
