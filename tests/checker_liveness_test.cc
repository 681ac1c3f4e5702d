// The liveness checker on hand-written histories: stuck locks, livelock, faults, crashed clients.
#include <gtest/gtest.h>

#include "checkers/checker.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using testing::HistoryBuilder;

// TTL 100 ms, op timeout 50 ms: the bound is 250 ms.
CheckResult check(const History& h, int64_t ttl_ms = 100, int64_t op_timeout_ms = 50) {
  auto c = make_checker("liveness");
  CheckOptions o;
  o.ttl_ms = ttl_ms;
  o.op_timeout_ms = op_timeout_ms;
  return run_checker(*c, h, o);
}

void acquire_ok(HistoryBuilder& b, Process p, int64_t at_ms, int64_t validity_ms = 99) {
  b.at_ms(at_ms).invoke(p, "acquire");
  b.at_ms(at_ms + 1).ok(p, "acquire");
  b.validity_ms(validity_ms);
}
void acquire_fail(HistoryBuilder& b, Process p, int64_t at_ms) {
  b.at_ms(at_ms).invoke(p, "acquire");
  b.at_ms(at_ms + 1).fail(p, "acquire");
}
void release_ok(HistoryBuilder& b, Process p, int64_t at_ms) {
  b.at_ms(at_ms).invoke(p, "release");
  b.at_ms(at_ms + 1).ok(p, "release");
}
// Failed acquires by processes 1 and 2 every 20 ms in [from, to).
void keep_failing(HistoryBuilder& b, int64_t from_ms, int64_t to_ms) {
  for (int64_t t = from_ms; t < to_ms; t += 20) acquire_fail(b, t / 20 % 2 ? 1 : 2, t);
}
void fault(HistoryBuilder& b, const std::string& name, const std::string& phase, int64_t at_ms) {
  nlohmann::json v = {{"fault", name}, {"phase", phase}, {"targets", {"n1"}}, {"detail", nlohmann::json::object()}};
  b.at_ms(at_ms).invoke(kNemesis, phase == "start" ? name : "heal", "", v);
  b.at_ms(at_ms + 1).ok(kNemesis, phase == "start" ? name : "heal", "", v);
}

TEST(LivenessChecker, EmptyHistoryIsUnknown) {
  CheckResult r = check({});
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("no acquires"), std::string::npos) << r.summary;
}

TEST(LivenessChecker, HandOverWithinTheBoundIsValid) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0);
  acquire_fail(b, 1, 10);
  acquire_fail(b, 1, 40);
  release_ok(b, 0, 80);
  acquire_ok(b, 1, 90);
  keep_failing(b, 100, 170);  // while 1 holds: not judged
  release_ok(b, 1, 170);
  acquire_ok(b, 2, 175);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["bound_ms"], 250.0);
}

// Regression: a history that begins seconds after t=0 (the run's clock starts before a replicated cluster or
// Redis Cluster is up) is not free from t=0: acquires that fail next to the first grant are no livelock.
TEST(LivenessChecker, AHistoryThatStartsLateIsNotFreeFromZero) {
  HistoryBuilder b;
  b.at_ms(5000).invoke(0, "acquire");
  b.at_ms(5001).invoke(1, "acquire");
  b.at_ms(5002).invoke(2, "acquire");
  b.at_ms(5004).ok(0, "acquire");
  b.validity_ms(99);
  b.at_ms(5005).fail(1, "acquire");
  b.at_ms(5006).fail(2, "acquire");
  release_ok(b, 0, 5080);
  acquire_ok(b, 1, 5090);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  // A real livelock that starts late is still found, from its start (the release invoke).
  HistoryBuilder late;
  acquire_ok(late, 0, 5000);
  release_ok(late, 0, 5050);
  keep_failing(late, 5060, 5400);
  acquire_ok(late, 0, 5400);
  CheckResult l = check(late.history());
  EXPECT_EQ(l.valid, Validity::kInvalid) << l.summary;
  ASSERT_FALSE(l.anomalies.empty());
  EXPECT_EQ(l.anomalies[0]["from_ns"], 5050 * 1000000LL) << l.anomalies[0].dump();
}

TEST(LivenessChecker, AHolderThatKeepsExtendingIsNotALivelock) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0);
  for (int64_t t = 50; t < 1000; t += 50) {
    b.at_ms(t).invoke(0, "extend");
    b.at_ms(t + 1).ok(0, "extend");
    b.validity_ms(99);
    acquire_fail(b, 1, t + 10);
  }
  release_ok(b, 0, 1000);
  acquire_ok(b, 1, 1005);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
}

TEST(LivenessChecker, AClientThatDiedMidAcquireLeavesAStuckLock) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0);
  release_ok(b, 0, 50);
  b.at_ms(60).invoke(3, "acquire");
  const int64_t crashed = b.at_ms(62).info(3, "acquire");  // died between SETNX and EXPIRE
  keep_failing(b, 70, 1000);                               // nobody ever gets it again
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  ASSERT_EQ(r.anomalies.size(), 1u);
  const auto& a = r.anomalies[0];
  EXPECT_EQ(a["kind"], "stuck-lock");
  EXPECT_EQ(a["key"], "lock-0");
  EXPECT_EQ(a["from_ns"], 162000000);  // the crashed acquire's completion + TTL
  EXPECT_EQ(a["to_ns"], 991000000);    // the last failed acquire's completion
  EXPECT_EQ(a["processes"], nlohmann::json::array({1, 2}));
  EXPECT_EQ(a["ops"][0], crashed - 1);  // the crashed acquire's invoke comes first
  EXPECT_LE(a["ops"].size(), 2u * 2 * 5 + 1);
  EXPECT_NE(a["description"].get<std::string>().find("never granted again"), std::string::npos) << a["description"];
  EXPECT_EQ(r.stats["stuck_locks"], 1);
}

// Ops without a key (a Jepsen/Knossos mutex history: one lock, no :key) are judged as one unnamed lock, as the
// mutex and lease checkers do; they used to be skipped ("nothing checked: no acquires").
TEST(LivenessChecker, KeylessOpsAreOneLock) {
  HistoryBuilder b;
  b.at_ms(0).invoke(0, "acquire", "");
  b.at_ms(1).ok(0, "acquire", "");
  b.at_ms(50).invoke(0, "release", "");
  b.at_ms(51).ok(0, "release", "");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["acquires"], 1);
  for (int64_t t = 60; t < 600; t += 20) {  // then failures with no holder past the bound: a stuck lock
    b.at_ms(t).invoke(1, "acquire", "");
    b.at_ms(t + 1).fail(1, "acquire", "");
  }
  r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  EXPECT_EQ(r.anomalies[0]["kind"], "stuck-lock");
  EXPECT_EQ(r.anomalies[0]["key"], "");
  EXPECT_EQ(r.anomalies[0]["description"].get<std::string>().rfind("the lock (no key) was never granted", 0), 0u)
      << r.anomalies[0]["description"];
}

TEST(LivenessChecker, AcquiresFailingWithNoHolderThenAGrantIsLivelock) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0);
  release_ok(b, 0, 50);  // free from 50 ms
  keep_failing(b, 60, 600);
  acquire_ok(b, 1, 610);
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "livelock");
  EXPECT_EQ(r.anomalies[0]["from_ns"], 50000000);
  EXPECT_EQ(r.stats["livelocks"], 1);
}

TEST(LivenessChecker, FailuresShorterThanTheBoundAreValid) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0);
  release_ok(b, 0, 50);
  keep_failing(b, 60, 290);  // the last fails at 280 < 50 + 250
  acquire_ok(b, 1, 300);
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(LivenessChecker, AHolderThatCrashedHoldsItForOneTtl) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0);
  b.at_ms(10).invoke(0, "release");
  b.at_ms(12).info(0, "release");  // may not have deleted it: busy until 1 + 100 ms
  keep_failing(b, 20, 340);        // last fail at 320 < 101 + 250
  acquire_ok(b, 1, 340);
  EXPECT_EQ(check(b.history()).valid, Validity::kValid) << check(b.history()).summary;
  // And a holder that never released at all: until its acquire + TTL.
  HistoryBuilder c;
  acquire_ok(c, 0, 0);
  keep_failing(c, 20, 340);
  acquire_ok(c, 1, 345);
  EXPECT_EQ(check(c.history()).valid, Validity::kValid);
}

TEST(LivenessChecker, FaultsSuspendTheJudgement) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0);
  release_ok(b, 0, 50);
  fault(b, "partition", "start", 55);
  keep_failing(b, 60, 1000);  // the node is cut off: nothing to say
  fault(b, "partition", "stop", 1000);
  keep_failing(b, 1005, 1200);  // 1001 + 250 not reached
  acquire_ok(b, 1, 1200);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["fault_periods"], 1);
  // Past the bound after the heal: a livelock from the heal on.
  HistoryBuilder c;
  acquire_ok(c, 0, 0);
  release_ok(c, 0, 50);
  fault(c, "partition", "start", 55);
  keep_failing(c, 60, 1000);
  const int64_t healed = c.history().size() + 1;
  fault(c, "partition", "stop", 1000);
  keep_failing(c, 1005, 1400);
  acquire_ok(c, 1, 1400);
  CheckResult s = check(c.history());
  ASSERT_EQ(s.valid, Validity::kInvalid) << s.summary;
  EXPECT_EQ(s.anomalies[0]["from_ns"], 1001000000);
  EXPECT_EQ(s.anomalies[0]["ops"][0], healed);
}

TEST(LivenessChecker, ClientSideFaultsDoNotSuspendIt) {
  HistoryBuilder b;
  fault(b, "client-crash", "start", 0);
  acquire_ok(b, 0, 5);
  b.at_ms(10).invoke(0, "acquire");  // (a second acquire of another key would be fine; this one crashes)
  b.at_ms(12).info(0, "acquire");
  keep_failing(b, 20, 800);
  fault(b, "client-crash", "stop", 900);
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  EXPECT_EQ(r.anomalies[0]["kind"], "stuck-lock");
}

TEST(LivenessChecker, InfoAcquiresAreNotFailures) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0);
  release_ok(b, 0, 50);
  // Only timeouts: each may have taken the lock, so nothing is judged against the bound.
  for (Process p = 1; p < 30; ++p) {
    b.at_ms(60 + p * 60).invoke(p, "acquire");
    b.at_ms(60 + p * 60 + 50).info(p, "acquire");
  }
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(LivenessChecker, OnlyFaultsNothingJudgedIsUnknown) {
  HistoryBuilder b;
  fault(b, "kill", "start", 0);
  keep_failing(b, 10, 500);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kUnknown) << r.summary;
}

TEST(LivenessChecker, KeysAreJudgedApart) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0);
  release_ok(b, 0, 10);
  for (int64_t t = 20; t < 1000; t += 20) {
    b.at_ms(t).invoke(1, "acquire", "lock-1");
    b.at_ms(t + 1).ok(1, "acquire", "lock-1");
    b.validity_ms(99);
    b.at_ms(t + 5).invoke(1, "release", "lock-1");
    b.at_ms(t + 6).ok(1, "release", "lock-1");
  }
  keep_failing(b, 20, 1000);  // lock-0 stuck, lock-1 fine
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["key"], "lock-0");
}

TEST(LivenessChecker, WithoutTheConfigTheTtlComesFromTheHistory) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0, 99);
  release_ok(b, 0, 50);
  keep_failing(b, 60, 1000);
  CheckResult r = check(b.history(), 0, 0);
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  EXPECT_EQ(r.stats["ttl_ms"], 99);
  EXPECT_NE(r.summary.find("TTL taken as 99 ms"), std::string::npos) << r.summary;
  // No validity anywhere and no config: unknown.
  HistoryBuilder c;
  c.at_ms(0).invoke(0, "acquire");
  c.at_ms(1).ok(0, "acquire");
  EXPECT_EQ(check(c.history(), 0, 0).valid, Validity::kUnknown);
}

TEST(LivenessChecker, IsDeterministic) {
  HistoryBuilder b;
  acquire_ok(b, 0, 0);
  release_ok(b, 0, 50);
  keep_failing(b, 60, 2000);
  CheckResult x = check(b.history()), y = check(b.history());
  EXPECT_EQ(x.summary, y.summary);
  EXPECT_EQ(x.anomalies, y.anomalies);
}

}  // namespace
}  // namespace lockcheck
