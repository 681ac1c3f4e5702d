// The loss-notice checker on hand-written histories: holders whose lock another process acquired, warned by
// their library before, after, or never; info ops, crashed clients, the empty history.
#include <gtest/gtest.h>

#include "checkers/checker.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using nlohmann::json;
using testing::HistoryBuilder;

CheckResult check(const History& h) { return run_checker(*make_checker("loss-notice"), h, CheckOptions{}); }

void acquire(HistoryBuilder& b, Process p, int64_t inv_ms, int64_t ok_ms, const std::string& key = "lock-0") {
  b.at_ms(inv_ms).invoke(p, "acquire", key);
  b.at_ms(ok_ms).ok(p, "acquire", key);
}
void release(HistoryBuilder& b, Process p, int64_t inv_ms, int64_t done_ms, const std::string& key = "lock-0") {
  b.at_ms(inv_ms).invoke(p, "release", key);
  b.at_ms(done_ms).ok(p, "release", key);
}
int64_t lost(HistoryBuilder& b, Process p, int64_t at_ms, const std::string& key = "lock-0") {
  return b.at_ms(at_ms).info(p, kLostF, key, {{"detail", "context canceled"}});
}

TEST(LossNoticeChecker, EmptyHistoryIsUnknown) {
  CheckResult r = check({});
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("nothing checked"), std::string::npos) << r.summary;
}

// Holds one after the other: nothing taken over, valid (the notice of a lock that expired on its own is counted).
TEST(LossNoticeChecker, NoTakeoverIsValid) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1);
  release(b, 0, 10, 11);
  lost(b, 0, 12);
  acquire(b, 1, 20, 21);
  release(b, 1, 30, 31);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["takeovers"], 0);
  EXPECT_EQ(r.stats["notices"], 1);
}

// The library said "lost" while the acquire was pending, then "held" (etcd's Mutex for a waiter whose lease had
// expired while it waited): the hold counts as warned from that notice, and the grant is listed as a note.
TEST(LossNoticeChecker, AGrantAfterTheLibrarySaidLostIsANoteAndCountsAsWarned) {
  HistoryBuilder b;
  b.at_ms(0).invoke(0, "acquire", "lock-0");
  const int64_t notice = lost(b, 0, 5);
  const int64_t granted = b.at_ms(6).ok(0, "acquire", "lock-0");
  acquire(b, 1, 3, 7);  // another process takes the lock too
  release(b, 0, 20, 21);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["takeovers"], 1);
  EXPECT_EQ(r.stats["warned_before"], 1);
  EXPECT_EQ(r.stats["grants_after_loss_notice"], 1);
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "grant-after-loss-notice");
  EXPECT_EQ(r.anomalies[0]["severity"], "note");
  EXPECT_EQ(r.anomalies[0]["ops"], json::array({notice, granted}));
  EXPECT_NE(r.summary.find("1 grant after the library had said the lock was lost"), std::string::npos) << r.summary;
  // A notice before the invoke is not this grant's (the process had not asked yet).
  HistoryBuilder c;
  lost(c, 0, 1);
  acquire(c, 0, 2, 3);
  release(c, 0, 4, 5);
  EXPECT_EQ(check(c.history()).stats["grants_after_loss_notice"], 0);
}

// Warned 5 ms before the other acquire completed: in time, lag -5 ms.
TEST(LossNoticeChecker, WarnedBeforeTheOtherAcquireIsValid) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1);
  lost(b, 0, 15);
  acquire(b, 1, 18, 20);
  release(b, 0, 30, 31);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["takeovers"], 1);
  EXPECT_EQ(r.stats["warned_before"], 1);
  EXPECT_EQ(r.stats["lags_ms"], json::array({-5.0}));
  EXPECT_EQ(r.stats["median_lag_ms"], -5.0);
  EXPECT_NE(r.summary.find("every holder was warned in time"), std::string::npos) << r.summary;
}

// Warned 10 ms after the other acquire: invalid; the overlap runs from the other acquire to the warning.
TEST(LossNoticeChecker, WarnedAfterTheOtherAcquireIsALateNotice) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1);     // ops 0, 1
  acquire(b, 1, 18, 20);   // ops 2, 3
  lost(b, 0, 30);          // op 4
  release(b, 0, 40, 41);   // ops 5, 6
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  ASSERT_EQ(r.anomalies.size(), 1u);
  const json& a = r.anomalies[0];
  EXPECT_EQ(a["kind"], "late-loss-notice");
  EXPECT_EQ(a["from_ns"], 20000000);
  EXPECT_EQ(a["to_ns"], 30000000);  // up to the warning, not to the release
  EXPECT_EQ(a["ops"], json::array({1, 3, 4, 5}));
  EXPECT_EQ(a["processes"], json::array({0, 1}));
  EXPECT_EQ(r.stats["warned_after"], 1);
  EXPECT_EQ(r.stats["lags_ms"], json::array({10.0}));
  EXPECT_NE(a["description"].get<std::string>().find("warned it that the lock was lost only 10"), std::string::npos)
      << a["description"];
}

// A client that reports losses but said nothing for this holder: never warned, invalid; the overlap runs to the
// end of the hold (its release).
TEST(LossNoticeChecker, NeverWarnedIsInvalidWhenTheClientReportsLosses) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1);
  acquire(b, 1, 18, 20);
  release(b, 0, 40, 41);
  release(b, 1, 50, 51);
  lost(b, 2, 60, "lock-1");  // the client does report losses (another process, another key)
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid) << r.summary;
  EXPECT_EQ(r.anomalies[0]["kind"], "no-loss-notice");
  EXPECT_EQ(r.anomalies[0]["to_ns"], 40000000);
  EXPECT_EQ(r.stats["never"], 1);
}

// No loss notice in the whole history: the client does not report losses; its warnings cannot be judged.
TEST(LossNoticeChecker, AClientThatReportsNoLossesIsUnknown) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1);
  acquire(b, 1, 18, 20);
  release(b, 0, 40, 41);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kUnknown) << r.summary;
  EXPECT_NE(r.summary.find("reported no loss notice"), std::string::npos) << r.summary;
}

// A holder retired by an info op stops holding then: an acquire after it is no takeover. A crashed client (its
// release never completed) holds to its release's invoke.
TEST(LossNoticeChecker, InfoOpsEndTheHoldAndCrashedReleasesEndAtTheirInvoke) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1);
  b.at_ms(5).invoke(0, "extend");
  b.at_ms(9).info(0, "extend");  // retired at 9
  acquire(b, 1, 10, 12);         // after the retirement: not a takeover
  b.at_ms(20).invoke(1, "release");  // never completes
  acquire(b, 2, 25, 27);
  lost(b, 3, 30, "lock-9");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["takeovers"], 0);
}

// A failed extend ends the use; a notice that comes during an op of the holder (between its invoke and its
// completion) counts; the holder's own later acquire is not a takeover.
TEST(LossNoticeChecker, ANoticeDuringAnOpCountsAndAFailedExtendEndsTheHold) {
  HistoryBuilder b;
  acquire(b, 0, 0, 1);
  b.at_ms(5).invoke(0, "extend");
  lost(b, 0, 6);
  acquire(b, 1, 6, 7);
  b.at_ms(8).fail(0, "extend");
  acquire(b, 0, 20, 21, "lock-1");
  acquire(b, 0, 22, 23, "lock-1");  // the same process again
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["takeovers"], 1);
  EXPECT_EQ(r.stats["warned_before"], 1);
  EXPECT_EQ(r.stats["lags_ms"], json::array({-1.0}));
}

// The median lag over several takeovers, for the scorecard.
TEST(LossNoticeChecker, TheMedianLagIsOverEveryWarnedTakeover) {
  HistoryBuilder b;
  int64_t t = 0;
  for (int64_t lag : {-4, 2, 6}) {
    acquire(b, 0, t, t + 1);
    acquire(b, 1, t + 10, t + 20);
    lost(b, 0, t + 20 + lag);
    release(b, 0, t + 30, t + 31);
    release(b, 1, t + 32, t + 33);
    t += 100;
  }
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.stats["takeovers"], 3);
  EXPECT_EQ(r.stats["warned_before"], 1);
  EXPECT_EQ(r.stats["warned_after"], 2);
  EXPECT_EQ(r.stats["median_lag_ms"], 2.0);
}

}  // namespace
}  // namespace lockcheck
