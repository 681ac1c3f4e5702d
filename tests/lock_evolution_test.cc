// The single-node evolution of the seeds (setnx-expire, getset, set-nx-ex-del, set-nx-timestamp, single) and
// the Redlock pair on a healthy cluster; then the defects each recipe is known for, shown on real Redis.
#include <gtest/gtest.h>

#include <thread>

#include "tests/support/lock_test_util.h"

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::make_lock;
using testing_util::TestCluster;

// One cluster of five independent masters for the whole file (starting one takes a moment).
class LockEvolutionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new TestCluster(5); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    for (size_t n = 0; n < 5; ++n) cluster_->conn(n)->command({"FLUSHALL"});
  }
  static TestCluster* cluster_;
};
TestCluster* LockEvolutionTest::cluster_ = nullptr;

class EveryAlgorithmTest : public LockEvolutionTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(EveryAlgorithmTest, AcquiresExcludesAndReleasesOnAHealthyCluster) {
  const std::string name = GetParam();
  const bool quorum = name.rfind("redlock", 0) == 0;
  auto a = make_lock(name, cluster_->options());
  auto b = make_lock(name, cluster_->options());
  const milliseconds ttl(10000);

  LockResult r = a->acquire("lock-0", ttl);
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  ASSERT_TRUE(r.validity_ms.has_value());
  EXPECT_GT(*r.validity_ms, 0);
  EXPECT_LE(*r.validity_ms, ttl.count());
  EXPECT_FALSE(r.token.has_value());  // no fencing asked for
  EXPECT_TRUE(cluster_->exists(0, "lock-0"));
  if (quorum) {
    for (size_t n = 1; n < 5; ++n) EXPECT_TRUE(cluster_->exists(n, "lock-0")) << "node " << n;
  }

  LockResult busy = b->acquire("lock-0", ttl);
  EXPECT_EQ(busy.outcome, OpType::kFail);
  EXPECT_NE(busy.error.find("held"), std::string::npos) << busy.error;

  EXPECT_EQ(b->release("lock-0").outcome, OpType::kFail);  // b never held it
  EXPECT_TRUE(cluster_->exists(0, "lock-0"));

  ASSERT_EQ(a->release("lock-0").outcome, OpType::kOk);
  for (size_t n = 0; n < 5; ++n) EXPECT_FALSE(cluster_->exists(n, "lock-0")) << "node " << n;

  ASSERT_EQ(b->acquire("lock-0", ttl).outcome, OpType::kOk);
  ASSERT_EQ(b->release("lock-0").outcome, OpType::kOk);
  for (size_t n = 0; n < 5; ++n) EXPECT_FALSE(cluster_->exists(n, "lock-0")) << "node " << n;
}

INSTANTIATE_TEST_SUITE_P(Locks, EveryAlgorithmTest, ::testing::ValuesIn(testing_util::in_process_locks()),
                         [](const auto& p) { return testing_util::param_name(p.param); });

TEST_F(LockEvolutionTest, ListedWithADescriptionAndAKnownDefect) {
  for (const char* name : {"setnx-expire", "getset", "set-nx-ex-del", "set-nx-timestamp", "single", "single-failover",
                           "redlock", "redlock-sequential", "external"}) {
    EXPECT_NE(find_lock_algorithm(name), nullptr) << name;
  }
  for (const auto& a : lock_registry()) {
    EXPECT_GT(std::string(a.description).size(), 10u) << a.name;
    EXPECT_GT(std::string(a.known_defects).size(), 10u) << a.name;
    EXPECT_NE(a.make, nullptr) << a.name;
  }
}

TEST_F(LockEvolutionTest, SetNxExDelHolderPastItsTtlDeletesTheNextHoldersLock) {
  auto a = make_lock("set-nx-ex-del", cluster_->options());
  auto b = make_lock("set-nx-ex-del", cluster_->options());
  auto c = make_lock("set-nx-ex-del", cluster_->options());
  ASSERT_EQ(a->acquire("lock-0", milliseconds(100)).outcome, OpType::kOk);
  std::this_thread::sleep_for(milliseconds(250));  // a "pauses" past its TTL
  ASSERT_EQ(b->acquire("lock-0", milliseconds(10000)).outcome, OpType::kOk);
  // a wakes up and releases with DEL: it deletes b's lock.
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk);
  EXPECT_FALSE(cluster_->exists(0, "lock-0"));
  // c now gets the lock while b still believes it holds it.
  EXPECT_EQ(c->acquire("lock-0", milliseconds(10000)).outcome, OpType::kOk);
}

TEST_F(LockEvolutionTest, SingleHolderPastItsTtlCannotDeleteTheNextHoldersLock) {
  // The control for the test above: V3.1's compare-and-delete refuses.
  auto a = make_lock("single", cluster_->options());
  auto b = make_lock("single", cluster_->options());
  ASSERT_EQ(a->acquire("lock-0", milliseconds(100)).outcome, OpType::kOk);
  std::this_thread::sleep_for(milliseconds(250));
  ASSERT_EQ(b->acquire("lock-0", milliseconds(10000)).outcome, OpType::kOk);
  LockResult r = a->release("lock-0");
  EXPECT_EQ(r.outcome, OpType::kFail);
  EXPECT_NE(r.error.find("not held"), std::string::npos) << r.error;
  EXPECT_TRUE(cluster_->exists(0, "lock-0"));
}

TEST_F(LockEvolutionTest, SetnxExpireClientDyingBetweenTheCommandsLeavesALockThatNeverExpires) {
  LockOptions o = cluster_->options();
  o.extra["test_die_after_setnx"] = true;
  auto dying = make_lock("setnx-expire", o);
  LockResult r = dying->acquire("lock-0", milliseconds(100));
  EXPECT_EQ(r.outcome, OpType::kInfo);
  auto ttl = cluster_->conn(0)->command({"PTTL", "lock-0"}).integer();
  ASSERT_TRUE(ttl.has_value());
  EXPECT_EQ(*ttl, -1);                             // exists, no expiry
  std::this_thread::sleep_for(milliseconds(250));  // well past the TTL the client asked for
  auto other = make_lock("setnx-expire", cluster_->options());
  EXPECT_EQ(other->acquire("lock-0", milliseconds(100)).outcome, OpType::kFail);
}

TEST_F(LockEvolutionTest, SetnxExpireSetsTheTtlWhenTheClientSurvives) {
  auto a = make_lock("setnx-expire", cluster_->options());
  ASSERT_EQ(a->acquire("lock-0", milliseconds(5000)).outcome, OpType::kOk);
  auto ttl = cluster_->conn(0)->command({"PTTL", "lock-0"}).integer();
  ASSERT_TRUE(ttl.has_value());
  EXPECT_GT(*ttl, 0);
  EXPECT_LE(*ttl, 5000);
}

TEST_F(LockEvolutionTest, GetsetStealsAnExpiredLockAndTheOldHolderDeletesIt) {
  auto a = make_lock("getset", cluster_->options());
  auto b = make_lock("getset", cluster_->options());
  ASSERT_EQ(a->acquire("lock-0", milliseconds(100)).outcome, OpType::kOk);
  EXPECT_EQ(cluster_->conn(0)->command({"PTTL", "lock-0"}).integer().value_or(0), -1);  // Redis never expires it
  EXPECT_EQ(b->acquire("lock-0", milliseconds(10000)).outcome, OpType::kFail);          // not expired yet
  std::this_thread::sleep_for(milliseconds(250));
  ASSERT_EQ(b->acquire("lock-0", milliseconds(10000)).outcome, OpType::kOk);  // stolen with GETSET
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk);                       // DEL: b's lock is gone
  EXPECT_FALSE(cluster_->exists(0, "lock-0"));
}

TEST_F(LockEvolutionTest, SetNxTimestampClientsInTheSameSecondShareTheValue) {
  // Start right after a second boundary so that both acquires fall within the same Unix second.
  auto now_ms = [] {
    return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  while (now_ms() % 1000 > 100) std::this_thread::sleep_for(milliseconds(5));
  auto a = make_lock("set-nx-timestamp", cluster_->options());
  auto b = make_lock("set-nx-timestamp", cluster_->options());
  ASSERT_EQ(a->acquire("lock-0", milliseconds(50)).outcome, OpType::kOk);
  std::this_thread::sleep_for(milliseconds(120));  // a's lock expires
  ASSERT_EQ(b->acquire("lock-0", milliseconds(10000)).outcome, OpType::kOk);
  // a's compare-and-delete matches b's value (same second): b's lock is deleted.
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kOk);
  EXPECT_FALSE(cluster_->exists(0, "lock-0"));
}

TEST_F(LockEvolutionTest, RecipesWithoutExtensionSayUnsupported) {
  for (const char* name : {"setnx-expire", "getset", "set-nx-ex-del", "set-nx-timestamp"}) {
    auto a = make_lock(name, cluster_->options());
    ASSERT_EQ(a->acquire("lock-1", milliseconds(1000)).outcome, OpType::kOk) << name;
    LockResult e = a->extend("lock-1", milliseconds(1000));
    EXPECT_EQ(e.outcome, OpType::kFail) << name;
    EXPECT_EQ(e.error, "unsupported") << name;
    EXPECT_EQ(a->release("lock-1").outcome, OpType::kOk) << name;
  }
}

TEST_F(LockEvolutionTest, SingleExtendsOnlyItsOwnLock) {
  auto a = make_lock("single", cluster_->options());
  ASSERT_EQ(a->acquire("lock-0", milliseconds(200)).outcome, OpType::kOk);
  LockResult e = a->extend("lock-0", milliseconds(5000));
  ASSERT_EQ(e.outcome, OpType::kOk) << e.error;
  EXPECT_GT(cluster_->conn(0)->command({"PTTL", "lock-0"}).integer().value_or(0), 1000);
}

TEST_F(LockEvolutionTest, AKilledNodeIsAFailNotAHang) {
  // The node of the single-node recipes is n1; a fresh 1-node cluster keeps the shared one intact.
  TestCluster one(1);
  auto a = make_lock("set-nx-ex-del", one.options());
  one.cluster->kill(0);
  LockResult r = a->acquire("lock-0", milliseconds(1000));
  EXPECT_EQ(r.outcome, OpType::kFail) << r.error;  // refused connection: certainly not applied
}

}  // namespace
}  // namespace lockcheck
