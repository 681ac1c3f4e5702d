// The lost-updates checker on hand-written set and counter histories.
#include <gtest/gtest.h>

#include "checkers/checker.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using nlohmann::json;
using testing::HistoryBuilder;

CheckResult check(const History& h) {
  auto c = make_checker("lost-updates");
  return run_checker(*c, h, CheckOptions{});
}

void add(HistoryBuilder& b, Process p, int64_t e, OpType outcome = OpType::kOk, const std::string& key = "set") {
  b.invoke(p, "add", key, e);
  b.add(p, outcome, "add", key, e);
}
void read(HistoryBuilder& b, Process p, json value, const std::string& key = "set") {
  b.invoke(p, "read", key);
  b.ok(p, "read", key, std::move(value));
}

// Nothing checked is not valid: no history, reads alone, or not one acknowledged update (e.g. every write refused).
TEST(LostUpdates, NothingToCheckIsUnknown) {
  CheckResult r = check({});
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("nothing checked"), std::string::npos);
  HistoryBuilder b;
  read(b, 0, json::array());  // reads alone
  EXPECT_EQ(check(b.history()).valid, Validity::kUnknown);
  HistoryBuilder c;
  add(c, 0, 1, OpType::kFail);
  add(c, 1, 2, OpType::kFail);
  read(c, 2, json::array());
  CheckResult r2 = check(c.history());
  EXPECT_EQ(r2.valid, Validity::kUnknown) << r2.summary;
  EXPECT_NE(r2.summary.find("not one add or increment was acknowledged"), std::string::npos) << r2.summary;
}

TEST(LostUpdates, AllAcknowledgedAddsPresentIsValid) {
  HistoryBuilder b;
  add(b, 0, 1);
  add(b, 1, 2);
  add(b, 0, 3);
  read(b, 2, json::array({1, 2, 3}));
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["per_key"]["set"]["ok_adds"], 3);
  EXPECT_EQ(r.stats["per_key"]["set"]["lost"], 0);
  EXPECT_EQ(r.stats["per_key"]["set"]["final_read"], 7);
}

TEST(LostUpdates, AMissingAcknowledgedAddIsLost) {
  HistoryBuilder b;
  add(b, 0, 1);
  add(b, 1, 2);  // ops 2, 3
  add(b, 0, 3);
  read(b, 2, json::array({3, 1}));
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  const auto& a = r.anomalies[0];
  EXPECT_EQ(a["kind"], "lost-update");
  EXPECT_EQ(a["elements"], json::array({2}));
  EXPECT_EQ(a["count"], 1);
  EXPECT_EQ(a["ops"], json::array({3, 6, 7}));
  EXPECT_NE(a["description"].get<std::string>().find("1 of 3 acknowledged adds to set (33.3%)"), std::string::npos)
      << a["description"];
  EXPECT_NEAR(r.stats["per_key"]["set"]["lost_pct"].get<double>(), 33.33, 0.01);
  EXPECT_NE(r.summary.find("1 of 3 acknowledged adds lost"), std::string::npos) << r.summary;
}

TEST(LostUpdates, IndeterminateAddsMayOrMayNotBePresent) {
  HistoryBuilder b;
  add(b, 0, 1, OpType::kInfo);
  add(b, 1, 2, OpType::kInfo);
  b.invoke(3, "add", "set", 4);  // crashed
  add(b, 4, 5, OpType::kOk);
  read(b, 2, json::array({1, 4, 5}));
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["per_key"]["set"]["recovered"], 2);
  EXPECT_EQ(r.stats["per_key"]["set"]["info_adds"], 3);
  EXPECT_NEAR(r.stats["per_key"]["set"]["recovered_pct"].get<double>(), 66.67, 0.01);
}

TEST(LostUpdates, AFailedAddThatIsPresentIsUnexpected) {
  HistoryBuilder b;
  add(b, 0, 1, OpType::kFail);
  read(b, 2, json::array({1}));
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["kind"], "unexpected-element");
  EXPECT_EQ(r.anomalies[0]["elements"], json::array({1}));
}

TEST(LostUpdates, AnElementNeverAddedIsUnexpected) {
  HistoryBuilder b;
  add(b, 0, 1);
  read(b, 2, json::array({1, 99}));
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["kind"], "unexpected-element");
  EXPECT_NE(r.anomalies[0]["description"].get<std::string>().find("never added"), std::string::npos);
}

TEST(LostUpdates, AStaleReadIsFound) {
  HistoryBuilder b;
  add(b, 0, 1);
  read(b, 1, json::array());  // 1 was acknowledged before this read was invoked
  read(b, 2, json::array({1}));
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "stale-read");
  EXPECT_EQ(r.anomalies[0]["elements"], json::array({1}));
  EXPECT_EQ(r.stats["per_key"]["set"]["stale_reads"], 1);
}

TEST(LostUpdates, StaleReadsExplainedByALossAreCountedNotListed) {
  HistoryBuilder b;
  add(b, 0, 1);
  read(b, 1, json::array());
  read(b, 2, json::array());
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "lost-update");
  EXPECT_EQ(r.stats["per_key"]["set"]["stale_reads"], 1);
  EXPECT_EQ(r.stats["per_key"]["set"]["stale_reads_not_explained_by_loss"], 0);
}

TEST(LostUpdates, ConcurrentReadsAndAddsAreNotStaleOrLost) {
  HistoryBuilder b;
  b.invoke(0, "add", "set", 1);
  b.invoke(1, "read", "set");
  b.ok(0, "add", "set", 1);
  b.ok(1, "read", "set", json::array());  // concurrent with the add: fine
  b.invoke(0, "add", "set", 2);
  b.invoke(2, "read", "set");  // the final read
  b.ok(0, "add", "set", 2);
  b.ok(2, "read", "set", json::array({1}));  // 2 completed while the final read ran: unconfirmed, not lost
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["per_key"]["set"]["unconfirmed"], 1);
}

TEST(LostUpdates, NoFinalReadIsUnknown) {
  HistoryBuilder b;
  add(b, 0, 1);
  b.invoke(1, "read", "set");
  b.fail(1, "read", "set");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("no successful read"), std::string::npos) << r.summary;
}

TEST(LostUpdates, KeysAreJudgedSeparately) {
  HistoryBuilder b;
  add(b, 0, 1, OpType::kOk, "a");
  add(b, 0, 1, OpType::kOk, "b");
  read(b, 1, json::array({1}), "a");
  read(b, 1, json::array(), "b");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["key"], "b");
  EXPECT_EQ(r.stats["per_key"]["a"]["verdict"], "valid");
}

TEST(LostUpdates, MalformedReadIsUnknownWithAMessage) {
  HistoryBuilder b;
  add(b, 0, 1);
  read(b, 1, "oops");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("must return an array"), std::string::npos) << r.summary;
}

TEST(LostUpdates, NemesisAndOtherOpsAreIgnored) {
  HistoryBuilder b;
  b.invoke(kNemesis, "partition", "");
  add(b, 0, 1);
  b.invoke(0, "acquire", "lock-0");
  b.ok(0, "acquire", "lock-0");
  b.info(kNemesis, "partition", "");
  read(b, 1, json::array({1}));
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

// --- Counter ---

void increment(HistoryBuilder& b, Process p, OpType outcome = OpType::kOk) {
  b.invoke(p, "increment", "counter");
  b.add(p, outcome, "increment", "counter");
}

TEST(LostUpdatesCounter, ExactCountIsValid) {
  HistoryBuilder b;
  for (int i = 0; i < 5; ++i) increment(b, i % 2);
  increment(b, 3, OpType::kInfo);
  increment(b, 4, OpType::kFail);
  read(b, 2, 5, "counter");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["per_key"]["counter"]["ok_increments"], 5);
  EXPECT_EQ(r.stats["per_key"]["counter"]["final_value"], 5);
}

TEST(LostUpdatesCounter, ALowCountLosesIncrements) {
  HistoryBuilder b;
  for (int i = 0; i < 5; ++i) increment(b, 0);
  read(b, 2, 3, "counter");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["kind"], "lost-update");
  EXPECT_EQ(r.anomalies[0]["count"], 2);
  EXPECT_EQ(r.stats["per_key"]["counter"]["lost"], 2);
  EXPECT_NEAR(r.stats["per_key"]["counter"]["lost_pct"].get<double>(), 40.0, 1e-9);
}

TEST(LostUpdatesCounter, AHighCountIsUnexpected) {
  HistoryBuilder b;
  for (int i = 0; i < 5; ++i) increment(b, 0);
  increment(b, 1, OpType::kInfo);
  read(b, 2, 7, "counter");
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["kind"], "unexpected-value");
  HistoryBuilder c;
  for (int i = 0; i < 5; ++i) increment(c, 0);
  increment(c, 1, OpType::kInfo);
  read(c, 2, 6, "counter");  // the info increment happened
  EXPECT_EQ(check(c.history()).valid, Validity::kValid);
}

TEST(LostUpdatesCounter, NoReadIsUnknown) {
  HistoryBuilder b;
  increment(b, 0);
  EXPECT_EQ(check(b.history()).valid, Validity::kUnknown);
}

}  // namespace
}  // namespace lockcheck
