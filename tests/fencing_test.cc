// Fencing tokens (locks/fencing.h): with LockOptions.fencing every successful acquire carries a token that
// is strictly greater than every earlier holder's, for every algorithm, including Redlock with counters that
// have drifted apart on the nodes.
#include <gtest/gtest.h>

#include "tests/support/lock_test_util.h"

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::make_lock;
using testing_util::TestCluster;

LockOptions fenced(LockOptions o) {
  o.fencing = true;
  o.extra["retry_count"] = 0;
  return o;
}

class FencingTest : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { cluster_ = new TestCluster(5); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static TestCluster* cluster_;
};
TestCluster* FencingTest::cluster_ = nullptr;

TEST_P(FencingTest, TokensStrictlyIncreaseAcrossHolders) {
  const std::string name = GetParam();
  const std::string key = "fence-" + name;
  std::vector<std::unique_ptr<LockClient>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(make_lock(name, fenced(cluster_->options())));
  int64_t last = 0;
  for (int round = 0; round < 9; ++round) {
    LockClient& c = *clients[round % clients.size()];
    LockResult r = c.acquire(key, milliseconds(5000));
    ASSERT_EQ(r.outcome, OpType::kOk) << name << " round " << round << ": " << r.error;
    ASSERT_TRUE(r.token.has_value()) << name;
    EXPECT_GT(*r.token, last) << name << " round " << round;
    last = *r.token;
    ASSERT_EQ(c.release(key).outcome, OpType::kOk) << name;
  }
  // A refused acquire hands out nothing.
  ASSERT_EQ(clients[0]->acquire(key, milliseconds(5000)).outcome, OpType::kOk);
  LockResult refused = clients[1]->acquire(key, milliseconds(5000));
  EXPECT_EQ(refused.outcome, OpType::kFail);
  EXPECT_FALSE(refused.token.has_value());
  ASSERT_EQ(clients[0]->release(key).outcome, OpType::kOk);
}

INSTANTIATE_TEST_SUITE_P(Locks, FencingTest, ::testing::ValuesIn(testing_util::in_process_locks()),
                         [](const auto& p) { return testing_util::param_name(p.param); });

TEST(RedlockFencingTest, DriftedCountersStillGiveIncreasingTokens) {
  // Counters x=100 on n1, 0 elsewhere. Without raising the counters after INCR, a holder that got 101 (max
  // over a majority including n1) could be followed, once n1 is gone, by one that gets 2.
  TestCluster c(5);
  c.conn(0)->command({"SET", "lock-0:fence", "100"});
  auto a = make_lock("redlock", fenced(c.options()));
  auto b = make_lock("redlock", fenced(c.options()));
  LockResult ra = a->acquire("lock-0", milliseconds(5000));
  ASSERT_EQ(ra.outcome, OpType::kOk) << ra.error;
  EXPECT_EQ(*ra.token, 101);
  ASSERT_EQ(a->release("lock-0").outcome, OpType::kOk);
  c.cluster->kill(0);
  LockResult rb = b->acquire("lock-0", milliseconds(5000));
  ASSERT_EQ(rb.outcome, OpType::kOk) << rb.error;
  EXPECT_GT(*rb.token, *ra.token);
}

TEST(RedlockFencingTest, NoQuorumForTheTokenIsInfoAndReleasesTheLock) {
  // The counter key holds a string on three nodes, so INCR fails there: no token quorum.
  TestCluster c(5);
  for (size_t n = 0; n < 3; ++n) c.conn(n)->command({"SET", "lock-0:fence", "not-a-number"});
  auto a = make_lock("redlock", fenced(c.options()));
  LockResult r = a->acquire("lock-0", milliseconds(5000));
  EXPECT_EQ(r.outcome, OpType::kInfo) << r.error;
  EXPECT_NE(r.error.find("no fencing token"), std::string::npos) << r.error;
  for (size_t n = 0; n < 5; ++n) EXPECT_FALSE(c.exists(n, "lock-0")) << "node " << n;
}

}  // namespace
}  // namespace lockcheck
