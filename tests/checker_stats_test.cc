// The stats checker.
#include <gtest/gtest.h>

#include "checkers/checker.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using testing::HistoryBuilder;

CheckResult check(const History& h) {
  auto c = make_checker("stats");
  return run_checker(*c, h, CheckOptions{});
}

TEST(StatsChecker, EmptyHistory) {
  CheckResult r = check({});
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_EQ(r.stats["ops"]["ok"], 0);
  EXPECT_TRUE(r.stats["throughput_per_s"]["ok"].empty());
}

TEST(StatsChecker, CountsLatenciesAndThroughput) {
  HistoryBuilder b;
  // 10 acquires by process 0 with latencies 1..10 ms, one per 100 ms.
  for (int i = 0; i < 10; ++i) {
    b.at_ms(i * 100).invoke(0, "acquire");
    b.at_ms(i * 100 + i + 1).ok(0, "acquire");
  }
  b.at_ms(1100).invoke(1, "release");
  b.at_ms(1102).fail(1, "release");
  b.at_ms(1200).invoke(2, "acquire");
  b.at_ms(1300).info(2, "acquire");
  b.at_ms(1400).invoke(3, "acquire");  // crashed
  b.at_ms(1500).invoke(kNemesis, "partition", "");
  b.at_ms(1600).info(kNemesis, "partition", "");
  b.at_ms(2500).invoke(1, "release");
  b.at_ms(2501).ok(1, "release");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid);
  const auto& s = r.stats;
  EXPECT_EQ(s["ops"]["ok"], 11);
  EXPECT_EQ(s["ops"]["fail"], 1);
  EXPECT_EQ(s["ops"]["info"], 1);
  EXPECT_EQ(s["ops"]["crashed"], 1);
  EXPECT_EQ(s["by_f"]["acquire"]["ok"], 10);
  EXPECT_EQ(s["by_f"]["acquire"]["info"], 1);
  EXPECT_EQ(s["by_f"]["acquire"]["crashed"], 1);
  EXPECT_EQ(s["by_f"]["release"]["fail"], 1);
  EXPECT_EQ(s["by_process"]["0"]["ok"], 10);
  EXPECT_EQ(s["by_process"]["1"]["fail"], 1);
  EXPECT_EQ(s["nemesis"]["partition"], 1);
  // acquire latencies: 1..10 ms and 100 ms (the info one).
  EXPECT_EQ(s["latency_ms"]["acquire"]["count"], 11);
  EXPECT_DOUBLE_EQ(s["latency_ms"]["acquire"]["p50"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(s["latency_ms"]["acquire"]["p90"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(s["latency_ms"]["acquire"]["p99"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(s["latency_ms"]["acquire"]["max"].get<double>(), 100.0);
  // Completions per second: [0,1 s): 10 ok; [1,2 s): 1 fail, 1 info; [2,3 s): 1 ok.
  EXPECT_EQ(s["throughput_per_s"]["ok"], nlohmann::json::array({10, 0, 1}));
  EXPECT_EQ(s["throughput_per_s"]["fail"], nlohmann::json::array({0, 1, 0}));
  EXPECT_EQ(s["throughput_per_s"]["info"], nlohmann::json::array({0, 1, 0}));
  EXPECT_NE(r.summary.find("13 client ops completed"), std::string::npos) << r.summary;
}

// A long info-heavy run retires a process per info op: the per-process table keeps the 100 busiest processes
// (ties: the lower id) and sums the rest, so that results.json stays small.
TEST(StatsChecker, PerProcessTableIsCapped) {
  HistoryBuilder b;
  for (int p = 0; p < 250; ++p) {
    const int ops = p >= 200 ? 3 : 1;  // processes 200..249 are the busiest
    for (int k = 0; k < ops; ++k) {
      b.invoke(p, "acquire");
      b.ok(p, "acquire");
    }
  }
  const auto s = check(b.history()).stats;
  EXPECT_EQ(s["processes"], 250);
  ASSERT_EQ(s["by_process"].size(), 100u);
  EXPECT_EQ(s["by_process"]["249"]["ok"], 3);
  EXPECT_EQ(s["by_process"]["0"]["ok"], 1);  // the 50 kept among the single-op ones: the lowest ids
  EXPECT_EQ(s["by_process"]["49"]["ok"], 1);
  EXPECT_FALSE(s["by_process"].contains("50"));
  EXPECT_EQ(s["by_process_omitted"]["processes"], 150);
  EXPECT_EQ(s["by_process_omitted"]["ok"], 150);
  EXPECT_EQ(s["ops"]["ok"], 50 * 3 + 200);
}

}  // namespace
}  // namespace lockcheck
