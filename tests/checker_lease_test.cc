// The lease checker on hand-written histories.
#include <gtest/gtest.h>

#include "checkers/checker.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using testing::HistoryBuilder;

CheckResult check(const History& h) {
  auto c = make_checker("lease");
  return run_checker(*c, h, CheckOptions{});
}

// An acquire by p on key: invoke at inv_ms, ok at ok_ms with validity v_ms (none when v_ms < 0).
void acquire(HistoryBuilder& b, Process p, int64_t inv_ms, int64_t ok_ms, int64_t v_ms,
             const std::string& key = "lock-0") {
  b.at_ms(inv_ms).invoke(p, "acquire", key);
  b.at_ms(ok_ms).ok(p, "acquire", key);
  if (v_ms >= 0) b.validity_ms(v_ms);
}
void release(HistoryBuilder& b, Process p, int64_t inv_ms, int64_t ok_ms, const std::string& key = "lock-0") {
  b.at_ms(inv_ms).invoke(p, "release", key);
  b.at_ms(ok_ms).ok(p, "release", key);
}

TEST(LeaseChecker, EmptyHistoryIsUnknown) {
  CheckResult r = check({});
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("nothing checked"), std::string::npos) << r.summary;
}

TEST(LeaseChecker, ReleasedBeforeTheNextAcquireIsValid) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 100);
  release(b, 0, 3, 4);  // cuts 0's window at 3 ms
  acquire(b, 1, 5, 6, 100);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["windows"], 2);
}

TEST(LeaseChecker, OverlappingLeasesAreAViolation) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 100);  // [1, 101] ms
  acquire(b, 1, 2, 5, 50);   // [5, 55] ms
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  const auto& a = r.anomalies[0];
  EXPECT_EQ(a["kind"], "double-grant");
  EXPECT_EQ(a["key"], "lock-0");
  EXPECT_EQ(a["processes"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(a["from_ns"], 5000000);
  EXPECT_EQ(a["to_ns"], 55000000);
  EXPECT_DOUBLE_EQ(a["overlap_ms"].get<double>(), 50.0);
  EXPECT_EQ(a["description"].get<std::string>().rfind(
                "p0 and p1 both held lock-0 within their leases for 50 ms from t=0.005 s", 0),
            0u)
      << a["description"];
  EXPECT_EQ(a["ops"], nlohmann::json::array({0, 1, 2, 3}));
}

TEST(LeaseChecker, AnExpiredLeaseDoesNotOverlap) {
  // The strict mutex view calls this a double grant; the lease view does not: 0's lease ran out at 3 ms.
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 3);
  acquire(b, 1, 5, 6, 100);
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

// Validity is what remains at the end of the acquire: the window starts at the ok. A slow acquire (the kind made
// during faults) whose validity is shorter than its own duration must still give a window (it was dropped when
// windows were measured from the invoke).
TEST(LeaseChecker, AWindowIsMeasuredFromTheAcquireOk) {
  HistoryBuilder b;
  acquire(b, 0, 0, 8, 10);  // [8, 18]
  acquire(b, 1, 11, 12, 10);
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["from_ns"], 12000000);
  EXPECT_EQ(r.anomalies[0]["to_ns"], 18000000);

  HistoryBuilder c;
  acquire(c, 0, 0, 30, 10);  // a 30 ms acquire with 10 ms left: [30, 40]
  acquire(c, 1, 31, 35, 100);
  CheckResult r2 = check(c.history());
  ASSERT_EQ(r2.valid, Validity::kInvalid) << r2.summary;
  EXPECT_EQ(r2.anomalies[0]["from_ns"], 35000000);
  EXPECT_EQ(r2.anomalies[0]["to_ns"], 40000000);
  EXPECT_EQ(r2.stats["windows_cut_before_ok"], 0);

  HistoryBuilder d;
  acquire(d, 0, 0, 30, 10);  // [30, 40]
  acquire(d, 1, 38, 41, 100);
  EXPECT_EQ(check(d.history()).valid, Validity::kValid);
}

TEST(LeaseChecker, AnExtendStretchesTheWindow) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 3);  // [1, 4]
  b.at_ms(2).invoke(0, "extend");
  b.at_ms(3).ok(0, "extend");
  b.validity_ms(10);  // -> [1, 13]
  acquire(b, 1, 5, 6, 100);
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["from_ns"], 6000000);
  EXPECT_EQ(r.anomalies[0]["to_ns"], 13000000);
  EXPECT_EQ(r.stats["extends_applied"], 1);
}

TEST(LeaseChecker, AnExtendAfterExpiryOpensANewWindow) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 1);  // [1, 2]
  acquire(b, 1, 3, 4, 4);  // [4, 8]
  release(b, 1, 9, 10);
  b.at_ms(10).invoke(0, "extend");
  b.at_ms(11).ok(0, "extend");
  b.validity_ms(5);  // new window [11, 15]: after 1's
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);

  HistoryBuilder c;
  acquire(c, 0, 0, 1, 1);  // [1, 2]
  acquire(c, 1, 3, 4, 4);  // [4, 8]
  c.at_ms(5).invoke(0, "extend");
  c.at_ms(6).ok(0, "extend");
  c.validity_ms(10);  // new window [6, 15] overlaps 1's
  CheckResult r = check(c.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["from_ns"], 6000000);
  EXPECT_EQ(r.anomalies[0]["to_ns"], 8000000);
}

TEST(LeaseChecker, AFailedOrIndeterminateReleaseStillEndsTheWindow) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 100);
  b.at_ms(2).invoke(0, "release");
  b.at_ms(3).info(0, "release");
  acquire(b, 1, 4, 5, 100);
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(LeaseChecker, AcquiresWithoutValidityAreSkippedAndCounted) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, -1);
  acquire(b, 1, 2, 3, -1);  // would overlap, but neither window is known
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_EQ(r.stats["acquires_without_validity"], 2);
  EXPECT_NE(r.summary.find("no acquire reported validity_ms"), std::string::npos) << r.summary;

  HistoryBuilder c;
  acquire(c, 0, 0, 1, -1);
  acquire(c, 1, 2, 3, 100);
  CheckResult r2 = check(c.history());
  EXPECT_EQ(r2.valid, Validity::kValid);
  EXPECT_NE(r2.summary.find("1 acquires without validity skipped"), std::string::npos) << r2.summary;
}

TEST(LeaseChecker, FailedAndInfoAcquiresGiveNoWindow) {
  HistoryBuilder b;
  b.at_ms(0).invoke(0, "acquire");
  b.at_ms(1).fail(0, "acquire");
  b.at_ms(2).invoke(2, "acquire");
  b.at_ms(3).info(2, "acquire");
  b.at_ms(4).invoke(3, "acquire");  // crashed
  acquire(b, 1, 5, 6, 100);
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(LeaseChecker, KeysAreIndependentAndNemesisIgnored) {
  HistoryBuilder b;
  b.at_ms(0).invoke(kNemesis, "clock-bump", "");
  acquire(b, 0, 1, 2, 100, "lock-0");
  acquire(b, 1, 3, 4, 100, "lock-1");
  b.at_ms(5).info(kNemesis, "clock-bump", "");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(LeaseChecker, AnOkAcquireWithNoValidityLeftIsAnExpiredGrant) {
  HistoryBuilder b;
  acquire(b, 0, 0, 5, 0);
  acquire(b, 1, 6, 7, 100);
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["kind"], "expired-grant");
  EXPECT_EQ(r.anomalies[0]["ops"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(r.stats["expired_grants"], 1);
}

TEST(LeaseChecker, EveryDoubleGrantIsListed) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 100);  // [1, 101]
  acquire(b, 1, 2, 3, 100);  // overlaps 0
  acquire(b, 2, 4, 5, 100);  // overlaps 0 and 1
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.stats["double_grants"], 3);
  EXPECT_EQ(r.anomalies.size(), 3u);
}

// A release that fails "not held": the lock was lost before it. A note, listed, not a violation.
TEST(LeaseChecker, AReleaseThatFoundTheLockLostIsANote) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 10);  // [1, 11]
  b.at_ms(9).invoke(0, "release");
  b.at_ms(20).fail(0, "release");
  b.error("not held on a quorum (expired or taken): deleted on 1 of 5");
  acquire(b, 1, 15, 16, 100);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "lost-before-release");
  EXPECT_EQ(r.anomalies[0]["severity"], "note");
  EXPECT_EQ(r.anomalies[0]["ops"], nlohmann::json::array({2, 3}));
  EXPECT_NE(r.summary.find("found the lock already lost"), std::string::npos) << r.summary;
}

// A failed extend ends the window at its completion (the holder stops using the lock then).
TEST(LeaseChecker, AFailedExtendEndsTheWindow) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 100);  // [1, 101]
  b.at_ms(5).invoke(0, "extend");
  b.at_ms(6).fail(0, "extend");
  b.error("not held (expired or taken)");
  acquire(b, 1, 7, 8, 100);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.anomalies[0]["kind"], "lost-before-extend");
}

// With the run's TTL known, an acquire that reports no validity gets the lease a careful client computes:
// [ok, invoke + TTL].
TEST(LeaseChecker, WithoutValidityTheTtlGivesTheLease) {
  CheckOptions o;
  o.ttl_ms = 50;
  HistoryBuilder b;
  acquire(b, 0, 0, 10, -1);   // [10, 50]
  acquire(b, 1, 40, 45, -1);  // [45, 90]: overlaps
  CheckResult r = run_checker(*make_checker("lease"), b.history(), o);
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  EXPECT_EQ(r.anomalies[0]["from_ns"], 45000000);
  EXPECT_EQ(r.anomalies[0]["to_ns"], 50000000);
  EXPECT_EQ(r.stats["validity_from_ttl"], 2);
  HistoryBuilder c;
  acquire(c, 0, 0, 10, -1);  // [10, 50]
  acquire(c, 1, 49, 51, -1);
  CheckResult r2 = run_checker(*make_checker("lease"), c.history(), o);
  EXPECT_EQ(r2.valid, Validity::kValid) << r2.summary;
  EXPECT_NE(r2.summary.find("2 from the TTL"), std::string::npos) << r2.summary;
}

// Protocol 2: the typed reason "not_held" says the lock was lost, whatever the free text; a typed reason other
// than not_held is not a loss even if the text starts with "not held"; without a reason the text decides.
TEST(LeaseChecker, TheTypedReasonNotHeldIsALossWhateverTheText) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 10);
  b.at_ms(9).invoke(0, "release");
  b.at_ms(20).fail(0, "release", "lock-0", {{"reason", "not_held"}});
  b.error("redislock: lock not held");
  acquire(b, 1, 21, 22, 10);
  b.at_ms(23).invoke(1, "release");
  b.at_ms(24).fail(1, "release", "lock-0", {{"reason", "unreachable"}});
  b.error("not held: the node is down");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "lost-before-release");
  EXPECT_EQ(r.anomalies[0]["ops"], nlohmann::json::array({2, 3}));
}

// An ok extend without validity_ms: with the TTL known it stretches the window to its invoke + TTL (what the
// renew workload assumes); without, it stretches nothing and the summary says so.
TEST(LeaseChecker, AnOkExtendWithoutValidityIsNotIgnoredSilently) {
  CheckOptions o;
  o.ttl_ms = 50;
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 40);  // [1, 41]
  b.at_ms(30).invoke(0, "extend");
  b.at_ms(32).ok(0, "extend");  // no validity: to 30 + 50 = 80
  acquire(b, 1, 60, 61, 40);    // overlaps [61, 80]
  CheckResult r = run_checker(*make_checker("lease"), b.history(), o);
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  EXPECT_EQ(r.anomalies[0]["to_ns"], 80000000);
  EXPECT_EQ(r.stats["validity_from_ttl"], 1);
  CheckResult r2 = check(b.history());  // no TTL given
  EXPECT_EQ(r2.valid, Validity::kValid) << r2.summary;
  EXPECT_EQ(r2.stats["extends_without_validity"], 1);
  EXPECT_NE(r2.summary.find("1 ok extends without validity and no TTL given: they stretch no window"),
            std::string::npos)
      << r2.summary;
}

TEST(LeaseChecker, TheSameProcessReacquiringIsNotAnOverlap) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1, 100);
  acquire(b, 0, 2, 3, 100);
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

}  // namespace
}  // namespace lockcheck
