// The renewal checker (the extend judgement) on hand-written histories: resurrected locks vs honest extends.
#include <gtest/gtest.h>

#include "checkers/checker.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using testing::HistoryBuilder;

CheckResult check(const History& h) { return run_checker(*make_checker("renewal"), h, CheckOptions{}); }

void op(HistoryBuilder& b, Process p, const std::string& f, int64_t at_ms, OpType outcome, int64_t validity = -1) {
  b.at_ms(at_ms).invoke(p, f);
  b.at_ms(at_ms + 1).add(p, outcome, f);
  if (validity >= 0) b.validity_ms(validity);
}

TEST(RenewalChecker, EmptyHistoryIsUnknown) {
  CheckResult r = check({});
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("no extends"), std::string::npos);
}

TEST(RenewalChecker, AcquiresWithoutExtendsAreUnknown) {
  HistoryBuilder b;
  op(b, 0, "acquire", 0, OpType::kOk, 100);
  op(b, 0, "release", 50, OpType::kOk);
  EXPECT_EQ(check(b.history()).valid, Validity::kUnknown);
}

TEST(RenewalChecker, AWatchdogThatKeepsItsLeaseIsValid) {
  HistoryBuilder b;
  op(b, 0, "acquire", 0, OpType::kOk, 100);
  op(b, 1, "acquire", 10, OpType::kFail);
  op(b, 0, "extend", 60, OpType::kOk, 100);
  op(b, 0, "extend", 120, OpType::kOk, 100);
  op(b, 0, "release", 150, OpType::kOk);
  op(b, 1, "acquire", 160, OpType::kOk, 100);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["ok_extends"], 2);
}

TEST(RenewalChecker, AnExtendThatFailsAfterAnotherHolderIsHonest) {
  HistoryBuilder b;
  op(b, 0, "acquire", 0, OpType::kOk, 100);
  op(b, 1, "acquire", 150, OpType::kOk, 100);  // 0 was paused past its TTL
  op(b, 1, "release", 200, OpType::kOk);
  op(b, 0, "extend", 250, OpType::kFail);  // compare-and-pexpire: not ours any more
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["failed_extends"], 1);
  EXPECT_NE(r.summary.find("1 failed"), std::string::npos) << r.summary;
}

TEST(RenewalChecker, AnExtendThatSucceedsAfterAnotherHolderIsAResurrectedLock) {
  HistoryBuilder b;
  op(b, 0, "acquire", 0, OpType::kOk, 100);    // ops 0, 1
  op(b, 0, "extend", 60, OpType::kOk, 100);    // ops 2, 3: 0's last lease
  op(b, 1, "acquire", 200, OpType::kOk, 100);  // ops 4, 5
  op(b, 1, "release", 250, OpType::kOk);       // ops 6, 7
  op(b, 0, "extend", 300, OpType::kOk, 100);   // ops 8, 9: SET NX re-created it
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  ASSERT_EQ(r.anomalies.size(), 1u);
  const auto& a = r.anomalies[0];
  EXPECT_EQ(a["kind"], "resurrected-lock");
  EXPECT_EQ(a["key"], "lock-0");
  EXPECT_EQ(a["processes"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(a["ops"], nlohmann::json::array({2, 3, 4, 5, 8, 9}));
  EXPECT_EQ(a["from_ns"], 201000000);
  EXPECT_EQ(a["to_ns"], 301000000);
  // Only what the history shows: nothing says how the extend succeeded.
  EXPECT_NE(a["description"].get<std::string>().find("lease did not last, yet it was told that it still holds"),
            std::string::npos);
  EXPECT_EQ(a["description"].get<std::string>().find("re-created"), std::string::npos);
  EXPECT_EQ(r.stats["resurrected"], 1);
}

TEST(RenewalChecker, AnotherProcessesInfoAcquireIsNoEvidence) {
  HistoryBuilder b;
  op(b, 0, "acquire", 0, OpType::kOk, 100);
  op(b, 1, "acquire", 150, OpType::kInfo);  // may or may not have taken it
  op(b, 0, "extend", 300, OpType::kOk, 100);
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(RenewalChecker, AnAcquireConcurrentWithTheExtendIsNoEvidence) {
  HistoryBuilder b;
  op(b, 0, "acquire", 0, OpType::kOk, 100);
  b.at_ms(100).invoke(0, "extend");
  b.at_ms(101).invoke(1, "acquire");
  b.at_ms(102).ok(1, "acquire");  // completes after the extend was invoked: order unknown
  b.at_ms(103).ok(0, "extend");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(RenewalChecker, AnExtendWithoutALeaseIsCountedNotJudged) {
  HistoryBuilder b;
  op(b, 1, "acquire", 0, OpType::kOk, 100);
  op(b, 0, "extend", 20, OpType::kOk, 100);  // 0 never acquired
  op(b, 0, "extend", 60, OpType::kInfo);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["extends_without_lease"], 1);
  EXPECT_EQ(r.stats["info_extends"], 1);
}

TEST(RenewalChecker, KeysAreJudgedApart) {
  HistoryBuilder b;
  b.at_ms(0).invoke(0, "acquire", "lock-0");
  b.at_ms(1).ok(0, "acquire", "lock-0");
  b.at_ms(10).invoke(1, "acquire", "lock-1");
  b.at_ms(11).ok(1, "acquire", "lock-1");
  b.at_ms(20).invoke(0, "extend", "lock-0");
  b.at_ms(21).ok(0, "extend", "lock-0");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

}  // namespace
}  // namespace lockcheck
