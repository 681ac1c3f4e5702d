// The faults checker on hand-written histories: planned faults that took effect, and ones that never did.
#include <gtest/gtest.h>

#include "checkers/checker.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using nlohmann::json;
using testing::HistoryBuilder;

CheckResult check(const History& h) { return run_checker(*make_checker("faults"), h, CheckOptions{}); }

void fault(HistoryBuilder& b, const std::string& f, const std::string& name, const std::string& phase, OpType done,
           json detail = json::object()) {
  const json v = {{"fault", name}, {"phase", phase}, {"targets", json::array()}, {"detail", detail}};
  b.invoke(kNemesis, f, "", v);
  b.add(kNemesis, done, f, "", v);
}

TEST(FaultsChecker, NoFaultIsUnknown) {
  EXPECT_EQ(check({}).valid, Validity::kUnknown);
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("nothing checked"), std::string::npos);
}

TEST(FaultsChecker, AppliedFaultsAreValid) {
  HistoryBuilder b;
  fault(b, "partition", "partition", "start", OpType::kOk);
  fault(b, "heal", "partition", "stop", OpType::kOk);
  fault(b, "kill", "kill", "start", OpType::kInfo);  // applied in part counts as taking effect
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["faults"]["partition"]["applied"], 1);
}

// A client-pause that was armed but never fired (its target never took the lock): the run did not test it.
TEST(FaultsChecker, ClientPauseArmedButNeverFiredIsUnknown) {
  HistoryBuilder b;
  for (int i = 0; i < 5; ++i) {
    fault(b, "client-pause", "client-pause", "start", OpType::kOk);
    fault(b, "client-resume", "client-pause", "stop", OpType::kOk, {{"paused", json::array()}});
  }
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("client-pause armed 5 times, fired 0"), std::string::npos) << r.summary;
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "fault-never-took-effect");
}

TEST(FaultsChecker, ClientPauseThatFiredIsValid) {
  HistoryBuilder b;
  fault(b, "client-pause", "client-pause", "start", OpType::kOk);
  fault(b, "client-resume", "client-pause", "stop", OpType::kOk,
        {{"paused", json::array({{{"process", 3}, {"pause_ms", 1000}}})}});
  fault(b, "client-pause", "client-pause", "start", OpType::kOk);
  fault(b, "client-resume", "client-pause", "stop", OpType::kOk, {{"paused", json::array()}});
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_NE(r.summary.find("client-pause armed 2 times, fired 1"), std::string::npos) << r.summary;
}

}  // namespace
}  // namespace lockcheck

namespace lockcheck {
namespace {

// Holder targeting: a start that found the holder's nodes says "aimed": true; one that found none says
// "aimed": false with the reason, counted in the stats and summary and listed as a note (never an anomaly).
TEST(FaultsChecker, StartsNotAimedAtTheHolderAreCountedWithTheirReasons) {
  HistoryBuilder b;
  fault(b, "kill", "kill", "start", OpType::kOk, {{"aimed", true}, {"holder_nodes", {{"how", "the request's key"}}}});
  fault(b, "restart", "kill", "stop", OpType::kOk);
  const std::string why = "no running node has the key lock-0 (the request's key; the client reported no Redis keys)";
  fault(b, "kill", "kill", "start", OpType::kOk, {{"aimed", false}, {"not_aimed_because", why}});
  fault(b, "restart", "kill", "stop", OpType::kOk);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["faults"]["kill"]["aimed"], 1);
  EXPECT_EQ(r.stats["faults"]["kill"]["not_aimed"], 1);
  EXPECT_EQ(r.stats["faults"]["kill"]["not_aimed_because"][why], 1);
  EXPECT_NE(r.summary.find("aimed at the holder 1 of 2"), std::string::npos) << r.summary;
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "fault-not-aimed");
  EXPECT_EQ(r.anomalies[0]["severity"], "note");
  EXPECT_EQ(r.anomalies[0]["ops"], json::array({4}));
  EXPECT_NE(r.anomalies[0]["description"].get<std::string>().find(why), std::string::npos);
}

}  // namespace
}  // namespace lockcheck
