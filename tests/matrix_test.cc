#include "harness/matrix.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/exit_codes.h"
#include "core/history.h"
#include "harness/runner.h"
#include "tests/support/test_util.h"
#include "harness/rerun.h"

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
  expect_matrix_error(R"({"entries": [{"name": "x", "colour": "red", "expect": "valid"}]})", "unknown field \"colour\"");
  expect_matrix_error(R"({"entries": [{"name": "x", "seeds": 0, "expect": "valid"}]})", "seeds");
  expect_matrix_error(R"({"entries": [{"name": "x", "expect": {"nochecker": "valid"}}]})", "unknown checker");
  expect_matrix_error(R"({"entries": [{"name": "x", "expect": "valid"}, {"name": "x", "expect": "valid"}]})", "twice");
}

TEST(MatrixTest, ShippedMatricesParse) {
  for (const char* name : {"quick", "default", "findings"}) {
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
  EXPECT_NE(junit.str().find("<failure message=\"expected invalid, found 0/1 invalid"), std::string::npos) << junit.str();
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
  auto [matched, total] = fault_timeline_match(read_history(first.run_dir + "/history.jsonl"),
                                               read_history(second + "/history.jsonl"));
  EXPECT_GT(total, 2u);
  // The last fault may be cut by the time limit in one run and not the other.
  EXPECT_GE(matched + 1, total) << again.str();
}

}  // namespace
}  // namespace lockcheck
