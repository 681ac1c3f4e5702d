// The checker registry, and properties every registered checker keeps.
#include <gtest/gtest.h>

#include "bench/history_gen.h"
#include "checkers/checker.h"

namespace lockcheck {
namespace {

TEST(CheckerRegistry, Names) {
  std::vector<std::string> names;
  for (const auto& c : checker_registry()) {
    names.push_back(c.name);
    EXPECT_GT(std::string(c.description).size(), 10u) << c.name;
    auto made = make_checker(c.name);
    ASSERT_NE(made, nullptr);
    EXPECT_EQ(made->name(), c.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"mutex", "lease", "fencing", "lost-updates", "liveness", "renewal",
                                             "stats", "faults", "loss-notice"}));
  EXPECT_EQ(make_checker("no-such-checker"), nullptr);
}

// Nothing to judge is unknown, never valid.
TEST(CheckerRegistry, EveryCheckerAnswersUnknownOnAnEmptyHistory) {
  for (const auto& c : checker_registry()) {
    CheckResult r = run_checker(*c.make(), History{}, CheckOptions{});
    EXPECT_EQ(r.valid, Validity::kUnknown) << c.name << ": " << r.summary;
    EXPECT_NE(r.summary.find("nothing checked"), std::string::npos) << c.name << ": " << r.summary;
    EXPECT_FALSE(r.summary.empty()) << c.name;
    EXPECT_TRUE(r.anomalies.is_array()) << c.name;
  }
}

TEST(CheckerRegistry, EveryCheckerIsDeterministic) {
  LockHistoryOptions go;
  go.ops = 4000;
  go.processes = 6;
  go.keys = 2;
  go.info_fraction = 0.05;
  go.violation_fraction = 0.02;
  go.nemesis_interval_us = 30000;
  const History h = generate_lock_history(go);
  for (const auto& c : checker_registry()) {
    CheckResult a = run_checker(*c.make(), h, CheckOptions{});
    CheckResult b = run_checker(*c.make(), h, CheckOptions{});
    EXPECT_EQ(a.valid, b.valid) << c.name;
    EXPECT_EQ(a.summary, b.summary) << c.name;
    EXPECT_EQ(a.anomalies, b.anomalies) << c.name;
    for (const auto& an : a.anomalies) {
      EXPECT_TRUE(an.contains("kind") && an.contains("description") && an.contains("ops")) << c.name << an.dump();
    }
    // Results round-trip through JSON (results.json).
    nlohmann::json j = a;
    EXPECT_EQ(j.get<CheckResult>().anomalies, a.anomalies);
  }
}

TEST(CheckerRegistry, GeneratedViolationsShowInMutexLeaseAndFencing) {
  LockHistoryOptions go;
  go.ops = 4000;
  go.processes = 6;
  go.violation_fraction = 0.05;
  go.validity_ms = 10000;  // long leases: a double grant is a lease overlap too
  LockHistoryInfo gi;
  const History h = generate_lock_history(go, &gi);
  ASSERT_GT(gi.injected_violations, 0);
  EXPECT_EQ(run_checker(*make_checker("mutex"), h, {}).valid, Validity::kInvalid);
  EXPECT_EQ(run_checker(*make_checker("lease"), h, {}).valid, Validity::kInvalid);
  // The simulated lock hands out increasing tokens even when it double-grants.
  EXPECT_EQ(run_checker(*make_checker("fencing"), h, {}).valid, Validity::kValid);
}

}  // namespace
}  // namespace lockcheck
