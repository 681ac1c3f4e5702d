// The fencing checker on hand-written histories.
#include <gtest/gtest.h>

#include "checkers/checker.h"
#include "tests/support/history_builder.h"

namespace lockcheck {
namespace {

using testing::HistoryBuilder;

CheckResult check(const History& h) {
  auto c = make_checker("fencing");
  return run_checker(*c, h, CheckOptions{});
}

void acquire(HistoryBuilder& b, Process p, int64_t token, const std::string& key = "lock-0") {
  b.invoke(p, "acquire", key);
  b.ok(p, "acquire", key);
  b.token(token);
}

// Nothing checked is not valid: a history without tokens (a lock that hands out none) is unknown.
TEST(FencingChecker, NoTokensIsUnknown) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.ok(0, "acquire");
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kUnknown);
  EXPECT_NE(r.summary.find("no fencing tokens"), std::string::npos);
  EXPECT_EQ(check({}).valid, Validity::kUnknown);
}

TEST(FencingChecker, IncreasingTokensAreValid) {
  HistoryBuilder b;
  acquire(b, 0, 1);
  acquire(b, 1, 2);
  acquire(b, 0, 7);
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["acquires_with_token"], 3);
}

TEST(FencingChecker, ConcurrentAcquiresMayCompleteInAnyOrder) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.invoke(1, "acquire");
  b.ok(1, "acquire");
  b.token(5);
  b.ok(0, "acquire");
  b.token(4);  // lower, but 0's acquire was invoked before 1's completed
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(FencingChecker, ALowerTokenAfterAHigherOneIsARegression) {
  HistoryBuilder b;
  acquire(b, 0, 5);
  b.invoke(1, "acquire");
  b.ok(1, "acquire");
  b.token(3);
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "token-regression");
  EXPECT_EQ(r.anomalies[0]["ops"], nlohmann::json::array({0, 1, 2, 3}));
  EXPECT_EQ(r.anomalies[0]["at_ns"], b.history()[3].time_ns);  // when the lower token came back
  EXPECT_EQ(r.anomalies[0]["processes"], nlohmann::json::array({0, 1}));
  EXPECT_NE(r.anomalies[0]["description"].get<std::string>().find("got token 3, but token 5"), std::string::npos);
}

TEST(FencingChecker, EqualTokensAreDuplicatesEvenWhenConcurrent) {
  HistoryBuilder b;
  b.invoke(0, "acquire");
  b.invoke(1, "acquire");
  b.ok(0, "acquire");
  b.token(5);
  b.ok(1, "acquire");
  b.token(5);
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  ASSERT_EQ(r.anomalies.size(), 1u);
  EXPECT_EQ(r.anomalies[0]["kind"], "duplicate-token");
  EXPECT_EQ(r.stats["duplicate_tokens"], 1);
  // The window starts at the first acquire's invoke; the duplicate exists once the second acquire returned.
  EXPECT_EQ(r.anomalies[0]["from_ns"], b.history()[0].time_ns);
  EXPECT_EQ(r.anomalies[0]["at_ns"], b.history()[3].time_ns);
  EXPECT_EQ(anomaly_time_ns(r.anomalies[0], nullptr), b.history()[3].time_ns);

  HistoryBuilder c;  // sequential duplicates: one duplicate-token, no regression reported twice
  acquire(c, 0, 5);
  acquire(c, 1, 5);
  CheckResult r2 = check(c.history());
  ASSERT_EQ(r2.valid, Validity::kInvalid);
  EXPECT_EQ(r2.anomalies.size(), 1u);
  EXPECT_EQ(r2.stats["token_regressions"], 0);
}

TEST(FencingChecker, TokensArePerKey) {
  HistoryBuilder b;
  acquire(b, 0, 5, "lock-0");
  acquire(b, 1, 1, "lock-1");
  acquire(b, 1, 5, "lock-1");
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(FencingChecker, AStaleWriteAcceptedIsAViolation) {
  HistoryBuilder b;
  b.invoke(0, "add", "set", 1);
  b.token(5);
  b.ok(0, "add", "set", 1);
  b.invoke(1, "add", "set", 2);
  b.token(4);
  b.ok(1, "add", "set", 2);
  CheckResult r = check(b.history());
  ASSERT_EQ(r.valid, Validity::kInvalid);
  EXPECT_EQ(r.anomalies[0]["kind"], "stale-write-accepted");
  EXPECT_EQ(r.anomalies[0]["key"], "set");
}

TEST(FencingChecker, StaleWritesRejectedAndEqualTokensAreFine) {
  HistoryBuilder b;
  b.invoke(0, "add", "set", 1);
  b.token(5);
  b.ok(0, "add", "set", 1);
  b.invoke(1, "add", "set", 2);
  b.token(4);
  b.fail(1, "add", "set", 2);  // the resource rejected the stale token
  b.invoke(0, "write", "set", 3);
  b.token(5);
  b.ok(0, "write", "set", 3);  // same holder, same token
  b.invoke(2, "add", "set", 4);
  b.token(3);
  b.info(2, "add", "set", 4);  // unknown: not judged
  CheckResult r = check(b.history());
  EXPECT_EQ(r.valid, Validity::kValid) << r.summary;
  EXPECT_EQ(r.stats["writes_with_token"], 2);
}

TEST(FencingChecker, ConcurrentWritesMayLandInAnyOrder) {
  HistoryBuilder b;
  b.invoke(0, "add", "set", 1);
  b.token(5);
  b.invoke(1, "add", "set", 2);
  b.token(4);
  b.ok(0, "add", "set", 1);
  b.ok(1, "add", "set", 2);
  EXPECT_EQ(check(b.history()).valid, Validity::kValid);
}

TEST(AnomalyTime, AtThenFromThenTheLatestOp) {
  HistoryBuilder b;
  acquire(b, 0, 5);
  acquire(b, 1, 6);
  const History h = b.history();
  EXPECT_EQ(anomaly_time_ns({{"kind", "x"}, {"from_ns", 7}, {"at_ns", 9}}, nullptr), 9);
  EXPECT_EQ(anomaly_time_ns({{"kind", "x"}, {"from_ns", 7}}, nullptr), 7);
  EXPECT_EQ(anomaly_time_ns({{"kind", "x"}, {"ops", {0, 3, 1}}}, &h), h[3].time_ns);
  EXPECT_FALSE(anomaly_time_ns({{"kind", "x"}, {"ops", {0, 3}}}, nullptr));
  EXPECT_FALSE(anomaly_time_ns({{"kind", "x"}, {"ops", {99}}}, &h));
  EXPECT_FALSE(anomaly_time_ns(nlohmann::json::array(), &h));
}

TEST(ForEachViolation, AnomaliesOfInvalidCheckersButNotNotesInFileOrder) {
  const nlohmann::json results = nlohmann::json::parse(R"({"checkers": [
    {"checker": "mutex", "valid": "invalid", "anomalies": [{"kind": "a"}, {"kind": "n", "severity": "note"}, 3,
                                                          {"kind": "b"}]},
    {"checker": "lease", "valid": "valid", "anomalies": [{"kind": "c"}]},
    {"checker": "stats", "valid": "unknown", "anomalies": [{"kind": "d"}]},
    {"checker": "fencing", "valid": "invalid", "anomalies": {"kind": "not an array"}},
    "not an object",
    {"checker": "liveness", "valid": "invalid", "anomalies": [{"kind": "e"}]}]})");
  std::vector<std::string> seen;
  for_each_violation(results, [&](const nlohmann::json& c, const nlohmann::json& a) {
    seen.push_back(c.value("checker", "") + "/" + a.value("kind", ""));
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"mutex/a", "mutex/b", "liveness/e"}));
  for (const nlohmann::json& bad : {nlohmann::json(), nlohmann::json::array(), nlohmann::json{{"checkers", 1}}}) {
    for_each_violation(bad, [](const nlohmann::json&, const nlohmann::json&) { ADD_FAILURE() << "called"; });
  }
}

}  // namespace
}  // namespace lockcheck
