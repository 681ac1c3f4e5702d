#include "harness/matrix.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/exit_codes.h"
#include "core/history.h"
#include "harness/rerun.h"
#include "harness/runner.h"
#include "tests/support/test_util.h"

namespace lockcheck {
namespace {

void expect_matrix_error(const std::string& text, const std::string& needle) {
  try {
    parse_matrix(nlohmann::json::parse(text), "results");
    FAIL() << "accepted: " << text;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(MatrixTest, ParsesEntriesWithDefaultsSeedsAndExpectations) {
  Matrix m = parse_matrix(nlohmann::json::parse(R"({
    "name": "t", "defaults": {"time_limit_s": 7, "concurrency": 3},
    "entries": [
      {"name": "a", "lock": "single", "expect": "valid"},
      {"name": "b", "workload": "lock-set", "time": 12, "seeds": 3, "expect": "invalid"},
      {"name": "c", "seeds": [5, 9], "expect": {"mutex": "invalid", "stats": "valid"}}]})"),
                          "res");
  ASSERT_EQ(m.entries.size(), 3u);
  EXPECT_EQ(m.entries[0].config.time_limit_s, 7);
  EXPECT_EQ(m.entries[0].config.concurrency, 3);
  EXPECT_EQ(m.entries[0].config.label, "a");
  EXPECT_EQ(m.entries[0].config.results_dir, "res");
  EXPECT_EQ(m.entries[0].expect, Validity::kValid);
  EXPECT_EQ(m.entries[1].config.time_limit_s, 12);
  EXPECT_EQ(m.entries[1].seeds, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(m.entries[1].expect, Validity::kInvalid);
  EXPECT_EQ(m.entries[2].seeds, (std::vector<uint64_t>{5, 9}));
  ASSERT_EQ(m.entries[2].expect_checkers.size(), 2u);
  EXPECT_EQ(m.entries[2].expect_checkers[0].first, "mutex");
}

TEST(MatrixTest, RejectsBadMatricesNamingTheEntry) {
  expect_matrix_error("[]", "must be a JSON object");
  expect_matrix_error(R"({"entries": []})", "non-empty array");
  expect_matrix_error(R"({"entries": [{"expect": "valid"}]})", "needs a \"name\"");
  expect_matrix_error(R"({"entries": [{"name": "x"}]})", "'x': expect is required");
  expect_matrix_error(R"({"entries": [{"name": "x", "expect": "maybe"}]})", "'x': expect must be");
  expect_matrix_error(R"({"entries": [{"name": "x", "lock": "nope", "expect": "valid"}]})", "'x': --lock");
  expect_matrix_error(R"({"entries": [{"name": "x", "colour": "red", "expect": "valid"}]})",
                      "'colour': neither a config field nor an option of --server redis");
  expect_matrix_error(R"({"entries": [{"name": "x", "seeds": 0, "expect": "valid"}]})", "seeds");
  expect_matrix_error(R"({"entries": [{"name": "x", "expect": {"nochecker": "valid"}}]})", "unknown checker");
  expect_matrix_error(R"({"entries": [{"name": "x", "expect": "valid"}, {"name": "x", "expect": "valid"}]})", "twice");
}

// A run's results.json as judge_entry reads it: the run's verdict and one checker's.
nlohmann::json results_with(const std::string& valid, const std::string& checker, const std::string& verdict) {
  return {{"valid", valid}, {"checkers", {{{"checker", checker}, {"valid", verdict}, {"summary", "s"}}}}};
}

TEST(MatrixTest, MinFoundDemandsThatManySeedsFindTheAnomaly) {
  Matrix m = parse_matrix(nlohmann::json::parse(R"({
    "defaults": {"min_found": 9},
    "entries": [
      {"name": "run", "seeds": 10, "expect": "invalid"},
      {"name": "checker", "seeds": 10, "expect": {"lease": "invalid", "stats": "valid"}},
      {"name": "lenient", "seeds": 10, "min_found": 1, "expect": "invalid"}]})"),
                          "res");
  ASSERT_EQ(m.entries.size(), 3u);
  EXPECT_EQ(m.entries[0].min_found, 9u);
  EXPECT_EQ(m.entries[2].min_found, 1u);
  // Eight of ten seeds found it (at 2, 4, ... 16 s); two did not.
  auto runs = [](size_t found) {
    std::vector<SeedRun> rs;
    for (size_t i = 0; i < 10; ++i) {
      const bool hit = i < found;
      rs.push_back({i + 1, hit ? kExitInvalid : kExitValid,
                    results_with(hit ? "invalid" : "valid", "lease", hit ? "invalid" : "valid"),
                    hit ? std::optional<double>(2.0 * static_cast<double>(i + 1)) : std::nullopt});
      rs.back().results["checkers"].push_back({{"checker", "stats"}, {"valid", "valid"}});
    }
    return rs;
  };
  EntryJudgement eight = judge_entry(m.entries[0], runs(8));
  EXPECT_FALSE(eight.met) << eight.finding;
  EXPECT_NE(eight.finding.find("expected invalid in >= 9 of 10, found 8/10 invalid"), std::string::npos)
      << eight.finding;
  EXPECT_NE(eight.finding.find("median first anomaly 9.0 s"), std::string::npos) << eight.finding;
  EXPECT_TRUE(judge_entry(m.entries[0], runs(9)).met);
  EXPECT_FALSE(judge_entry(m.entries[1], runs(8)).met);
  EntryJudgement nine = judge_entry(m.entries[1], runs(9));
  EXPECT_TRUE(nine.met) << nine.finding;
  EXPECT_NE(nine.finding.find("lease: expected invalid in >= 9 of 10, found 9/10 invalid"), std::string::npos)
      << nine.finding;
  EXPECT_TRUE(judge_entry(m.entries[2], runs(1)).met);
  EXPECT_FALSE(judge_entry(m.entries[2], runs(0)).met);
  // A failed run fails the entry whatever was found.
  std::vector<SeedRun> failed = runs(10);
  failed[3].exit_code = kExitHarness;
  EXPECT_TRUE(judge_entry(m.entries[0], failed).error);

  expect_matrix_error(R"({"entries": [{"name": "x", "seeds": 3, "min_found": 4, "expect": "invalid"}]})",
                      "'x': min_found must be an integer from 1 to the number of seeds (3)");
  expect_matrix_error(R"({"entries": [{"name": "x", "min_found": 0, "expect": "invalid"}]})", "min_found");
  expect_matrix_error(R"({"defaults": {"min_found": "nine"}, "entries": [{"name": "x", "expect": "invalid"}]})",
                      "'x': min_found");
}

// max_found: a "valid" expectation that allows that many seeds not to be valid (the anomaly is rare here).
TEST(MatrixTest, MaxFoundAllowsThatManySeedsToFindTheAnomaly) {
  Matrix m = parse_matrix(nlohmann::json::parse(R"({"entries": [
      {"name": "run", "seeds": 10, "max_found": 2, "expect": "valid"},
      {"name": "checker", "seeds": 10, "max_found": 2, "expect": {"mutex": "valid"}},
      {"name": "strict", "seeds": 10, "expect": "valid"}]})"),
                          "res");
  ASSERT_EQ(m.entries.size(), 3u);
  EXPECT_EQ(m.entries[0].max_found, 2u);
  EXPECT_EQ(m.entries[2].max_found, 0u);
  auto runs = [](size_t found) {
    std::vector<SeedRun> rs;
    for (size_t i = 0; i < 10; ++i) {
      const bool hit = i < found;
      rs.push_back({i + 1, hit ? kExitInvalid : kExitValid,
                    results_with(hit ? "invalid" : "valid", "mutex", hit ? "invalid" : "valid"), std::nullopt});
    }
    return rs;
  };
  EntryJudgement two = judge_entry(m.entries[0], runs(2));
  EXPECT_TRUE(two.met) << two.finding;
  EXPECT_NE(two.finding.find("expected valid in >= 8 of 10, found 2/10 invalid"), std::string::npos) << two.finding;
  EXPECT_FALSE(judge_entry(m.entries[0], runs(3)).met);
  EXPECT_TRUE(judge_entry(m.entries[1], runs(2)).met);
  EXPECT_FALSE(judge_entry(m.entries[1], runs(3)).met);
  EXPECT_FALSE(judge_entry(m.entries[2], runs(1)).met);
  EXPECT_TRUE(judge_entry(m.entries[2], runs(0)).met);

  expect_matrix_error(R"({"entries": [{"name": "x", "seeds": 3, "max_found": 3, "expect": "valid"}]})",
                      "'x': max_found must be an integer from 0 to the number of seeds - 1 (2)");
  expect_matrix_error(R"({"entries": [{"name": "x", "seeds": 3, "max_found": 1, "expect": "invalid"}]})",
                      "'x': max_found applies to a \"valid\" expectation");
}

// The finding's example sentence is the earliest anomaly of what the entry is about, not the first invalid
// checker's first anomaly.
TEST(MatrixTest, TheFindingQuotesTheEarliestAnomalyOfTheCheckersTheEntryIsAbout) {
  Matrix m = parse_matrix(nlohmann::json::parse(R"({"entries": [
      {"name": "fencing", "seeds": 1, "expect": {"fencing": "invalid"}},
      {"name": "any", "seeds": 1, "expect": "invalid"}]})"),
                          "res");
  nlohmann::json results = {
      {"valid", "invalid"},
      {"checkers",
       {{{"checker", "mutex"},
         {"valid", "invalid"},
         {"anomalies", {{{"kind", "double-grant"}, {"description", "mutex one"}, {"from_ns", 1000}}}}},
        {{"checker", "fencing"},
         {"valid", "invalid"},
         {"anomalies",
          {{{"kind", "duplicate-token"}, {"description", "late"}, {"from_ns", 10}, {"at_ns", 9000}},
           {{"kind", "lost-before-release"}, {"severity", "note"}, {"description", "a note"}, {"from_ns", 1}},
           {{"kind", "token-regression"}, {"description", "early"}, {"from_ns", 100}, {"at_ns", 5000}}}}}}}};
  const std::vector<SeedRun> runs = {{1, kExitInvalid, results, 5e-6}};
  EntryJudgement f = judge_entry(m.entries[0], runs);
  EXPECT_NE(f.finding.find("seed 1: fencing: early"), std::string::npos) << f.finding;
  EntryJudgement any = judge_entry(m.entries[1], runs);
  EXPECT_NE(any.finding.find("seed 1: mutex: mutex one"), std::string::npos) << any.finding;
}

// "note" (the documentation line an expectation rests on) is for people: accepted, not a config field.
TEST(MatrixTest, ANoteIsNotAConfigField) {
  Matrix m = parse_matrix(nlohmann::json::parse(R"({"entries": [{"name": "x", "expect": "valid",
      "note": "Symfony 5.4 Lock docs: ConsensusStrategy requires more than 50% of the stores"}]})"),
                          "results");
  ASSERT_EQ(m.entries.size(), 1u);
  EXPECT_EQ(m.entries[0].name, "x");
}

TEST(MatrixTest, ShippedMatricesParse) {
  for (const char* name : {"quick", "default", "findings", "findings-failover", "false-alarms"}) {
    Matrix m = load_matrix(name, "results");
    EXPECT_FALSE(m.entries.empty()) << name;
  }
}

TEST(MatrixTest, AWrongExpectationFailsTheMatrixAndShowsInJUnit) {
  TempDir dir;
  const std::string file = dir.str() + "/m.json";
  std::ofstream(file) << R"({"name": "wrong", "defaults": {"time_limit_s": 3, "concurrency": 3, "ttl_ms": 300},
    "entries": [{"name": "healthy-is-valid", "expect": "valid"},
                {"name": "healthy-claimed-invalid", "expect": "invalid"}]})";
  TestAllOptions o;
  o.matrix = file;
  o.results_dir = dir.str() + "/results";
  o.junit_path = dir.str() + "/junit.xml";
  o.parallel = 2;
  o.lockcheck_binary = LOCKCHECK_BINARY;
  std::ostringstream out;
  EXPECT_EQ(test_all(o, out), kExitInvalid) << out.str();
  EXPECT_NE(out.str().find("met     healthy-is-valid"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("MISSED  healthy-claimed-invalid"), std::string::npos) << out.str();
  std::ifstream in(o.junit_path);
  std::stringstream junit;
  junit << in.rdbuf();
  EXPECT_NE(junit.str().find("tests=\"2\" failures=\"1\""), std::string::npos) << junit.str();
  EXPECT_NE(junit.str().find("name=\"healthy-claimed-invalid\""), std::string::npos);
  EXPECT_NE(junit.str().find("<failure message=\"expected invalid, found 0/1 invalid"), std::string::npos)
      << junit.str();
}

TEST(MatrixTest, TheSummaryOffersReproduceForEveryInvalidRun) {
  TempDir dir;
  const std::string file = dir.str() + "/m.json";
  // A GC pause of the holder, twice a second, with a 300 ms TTL: mutex is invalid within a 4 s run.
  std::ofstream(file) << R"({"name": "repro", "defaults": {"time_limit_s": 4, "concurrency": 3, "ttl_ms": 300},
    "entries": [{"name": "healthy", "expect": "valid"},
                {"name": "gc-pause", "nemesis": ["client-pause"], "nemesis_targeting": "holder",
                 "nemesis_interval_s": 0.5, "expect": {"mutex": "invalid"}}]})";
  TestAllOptions o;
  o.matrix = file;
  o.results_dir = dir.str() + "/results";
  o.parallel = 2;
  o.lockcheck_binary = LOCKCHECK_BINARY;
  std::ostringstream out;
  EXPECT_EQ(test_all(o, out), kExitValid) << out.str();
  const std::string summary_path = out.str().substr(out.str().find("summary: ") + 9);
  std::ifstream in(summary_path.substr(0, summary_path.find('\n')));
  std::stringstream html;
  html << in.rdbuf();
  EXPECT_NE(html.str().find("<h2 id=\"reproduce\">Reproduce</h2>"), std::string::npos) << html.str();
  EXPECT_NE(html.str().find("<td>gc-pause</td><td>1</td><td><code>lockcheck reproduce "), std::string::npos)
      << html.str();
  EXPECT_EQ(html.str().find("<td>healthy</td><td>1</td><td><code>lockcheck reproduce"), std::string::npos);
}

TEST(MatrixTest, RerunReproducesTheFaultSchedule) {
  TempDir dir;
  RunConfig c;
  c.results_dir = dir.str() + "/results";
  c.progress = false;
  c.seed = 11;
  c.time_limit_s = 5;
  c.concurrency = 3;
  c.ttl_ms = 300;
  c.nemesis = {"pause", "partition"};
  c.nemesis_interval_s = 0.5;
  std::ostringstream out;
  RunOutcome first = run_test(c, out);
  ASSERT_FALSE(first.run_dir.empty()) << out.str();
  std::ostringstream again;
  rerun(first.run_dir, again);
  EXPECT_NE(again.str().find("fault timeline matched"), std::string::npos) << again.str();
  const std::string second = testing_util::latest_run(c.results_dir);
  ASSERT_NE(second, boost::filesystem::canonical(first.run_dir).string());
  auto [matched, total] =
      fault_timeline_match(read_history(first.run_dir + "/history.jsonl"), read_history(second + "/history.jsonl"));
  EXPECT_GT(total, 2u);
  // The last fault may be cut by the time limit in one run and not the other.
  EXPECT_GE(matched + 1, total) << again.str();
}

}  // namespace
}  // namespace lockcheck
