// Redlock (locks/redlock.cc) and its fan-out engine (locks/node_fanout.h) against five real masters, with
// nodes killed and paused: quorum, validity, clean-up, the outcome taxonomy, and parallel vs sequential.
#include <gtest/gtest.h>

#include <thread>

#include "locks/node_fanout.h"
#include "locks/quorum.h"
#include "tests/support/lock_test_util.h"

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::make_lock;
using testing_util::TestCluster;

LockOptions no_retries(LockOptions o) {
  o.extra["retry_count"] = 0;
  return o;
}

int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t).count();
}

TEST(QuorumTest, Judge) {
  EXPECT_EQ(majority(5), 3);
  EXPECT_EQ(majority(4), 3);
  EXPECT_EQ(majority(1), 1);
  EXPECT_EQ(judge({3, 2, 0}, 3), QuorumVerdict::kReached);
  EXPECT_EQ(judge({2, 3, 0}, 3), QuorumVerdict::kUnreachable);
  EXPECT_EQ(judge({2, 2, 1}, 3), QuorumVerdict::kUnknown);
  EXPECT_EQ(judge({0, 2, 3}, 3), QuorumVerdict::kUnknown);
  EXPECT_EQ(judge({0, 3, 2}, 3), QuorumVerdict::kUnreachable);
}

TEST(RedlockTest, ValidityIsTheTtlLessElapsedAndDrift) {
  TestCluster c(5);
  auto a = make_lock("redlock", c.options());
  LockResult r = a->acquire("lock-0", milliseconds(10000));
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  ASSERT_TRUE(r.validity_ms.has_value());
  EXPECT_GT(*r.validity_ms, 0);
  EXPECT_LE(*r.validity_ms, 10000 - 100 - 2);  // drift = 1% of the TTL + 2 ms
  for (size_t n = 0; n < 5; ++n) {
    auto pttl = c.conn(n)->command({"PTTL", "lock-0"}).integer();
    ASSERT_TRUE(pttl.has_value());
    EXPECT_GT(*pttl, 0);
    EXPECT_LE(*pttl, 10000);
  }
  ASSERT_EQ(a->release("lock-0").outcome, OpType::kOk);
  for (size_t n = 0; n < 5; ++n) EXPECT_FALSE(c.exists(n, "lock-0")) << "node " << n;
}

TEST(RedlockTest, AcquiresWithTwoOfFiveNodesKilled) {
  TestCluster c(5);
  c.cluster->kill(0);
  c.cluster->kill(3);
  for (const char* name : {"redlock", "redlock-sequential"}) {
    auto a = make_lock(name, no_retries(c.options()));
    LockResult r = a->acquire("lock-0", milliseconds(5000));
    ASSERT_EQ(r.outcome, OpType::kOk) << name << ": " << r.error;
    EXPECT_LT(*r.validity_ms, 5000);
    for (size_t n : {1, 2, 4}) EXPECT_TRUE(c.exists(n, "lock-0")) << name << " node " << n;
    auto b = make_lock(name, no_retries(c.options()));
    EXPECT_EQ(b->acquire("lock-0", milliseconds(5000)).outcome, OpType::kFail) << name;
    ASSERT_EQ(a->release("lock-0").outcome, OpType::kOk) << name;
    for (size_t n : {1, 2, 4}) EXPECT_FALSE(c.exists(n, "lock-0")) << name << " node " << n;
  }
}

TEST(RedlockTest, FailsWithThreeOfFiveNodesKilledAndLeavesNoKey) {
  TestCluster c(5);
  c.cluster->kill(0);
  c.cluster->kill(2);
  c.cluster->kill(4);
  for (const char* name : {"redlock", "redlock-sequential"}) {
    LockOptions o = c.options();
    o.extra["retry_count"] = 1;
    o.extra["retry_delay_ms"] = 10;
    auto a = make_lock(name, o);
    LockResult r = a->acquire("lock-0", milliseconds(5000));
    EXPECT_EQ(r.outcome, OpType::kFail) << name << ": " << r.error;  // refused connections are definite
    EXPECT_NE(r.error.find("no quorum"), std::string::npos) << r.error;
    for (size_t n : {1, 3}) EXPECT_FALSE(c.exists(n, "lock-0")) << name << " node " << n;
  }
}

TEST(RedlockTest, AHeldLockIsAFailNamingTheHolder) {
  TestCluster c(5);
  auto a = make_lock("redlock", c.options());
  auto b = make_lock("redlock", no_retries(c.options()));
  ASSERT_EQ(a->acquire("lock-0", milliseconds(5000)).outcome, OpType::kOk);
  LockResult r = b->acquire("lock-0", milliseconds(5000));
  EXPECT_EQ(r.outcome, OpType::kFail);
  EXPECT_EQ(r.error.rfind("held", 0), 0u) << r.error;
  // b's failed attempt released only its own token: a's keys are all still there.
  for (size_t n = 0; n < 5; ++n) EXPECT_TRUE(c.exists(n, "lock-0")) << "node " << n;
}

TEST(RedlockTest, RetriesUntilTheHolderReleases) {
  TestCluster c(5);
  auto a = make_lock("redlock", c.options());
  LockOptions o = c.options();
  o.extra["retry_count"] = 20;
  o.extra["retry_delay_ms"] = 50;
  o.extra["retry_jitter_ms"] = 10;
  auto b = make_lock("redlock", o);
  ASSERT_EQ(a->acquire("lock-0", milliseconds(5000)).outcome, OpType::kOk);
  std::thread releaser([&] {
    std::this_thread::sleep_for(milliseconds(200));
    a->release("lock-0");
  });
  LockResult r = b->acquire("lock-0", milliseconds(5000));
  releaser.join();
  EXPECT_EQ(r.outcome, OpType::kOk) << r.error;
}

TEST(RedlockTest, UnknownQuorumIsInfo) {
  // Three of five nodes paused: their SETs time out and may yet be applied, so a quorum may hold the token.
  TestCluster c(5);
  c.cluster->pause(0);
  c.cluster->pause(1);
  c.cluster->pause(2);
  auto a = make_lock("redlock", no_retries(c.options(milliseconds(200))));
  LockResult r = a->acquire("lock-0", milliseconds(5000));
  EXPECT_EQ(r.outcome, OpType::kInfo) << r.error;
  EXPECT_NE(r.error.find("unknown"), std::string::npos) << r.error;
  for (size_t n = 0; n < 3; ++n) c.cluster->resume(n);
}

TEST(RedlockTest, QuorumTooLateIsReleasedAndReportedFail) {
  // A TTL so short that validity (TTL - elapsed - drift) cannot be positive: the quorum is won, then undone.
  TestCluster c(5);
  auto a = make_lock("redlock", no_retries(c.options()));
  LockResult r = a->acquire("lock-0", milliseconds(2));  // drift alone is 2 ms
  EXPECT_EQ(r.outcome, OpType::kFail) << r.error;
  EXPECT_NE(r.error.find("too late"), std::string::npos) << r.error;
  std::this_thread::sleep_for(milliseconds(10));
  for (size_t n = 0; n < 5; ++n) EXPECT_FALSE(c.exists(n, "lock-0")) << "node " << n;
}

TEST(RedlockTest, ReleaseIsSentToEveryNodeWhateverTheAcquireSaw) {
  TestCluster c(5);
  auto a = make_lock("redlock", no_retries(c.options()));
  ASSERT_EQ(a->acquire("lock-0", milliseconds(5000)).outcome, OpType::kOk);
  ASSERT_EQ(a->release("lock-0").outcome, OpType::kOk);
  for (size_t n = 0; n < 5; ++n) EXPECT_FALSE(c.exists(n, "lock-0")) << "node " << n;
  EXPECT_EQ(a->release("lock-0").outcome, OpType::kFail);  // not held any more
}

TEST(RedlockTest, ReleaseAfterExpiryIsNotHeld) {
  TestCluster c(5);
  auto a = make_lock("redlock", no_retries(c.options()));
  ASSERT_EQ(a->acquire("lock-0", milliseconds(100)).outcome, OpType::kOk);
  std::this_thread::sleep_for(milliseconds(250));
  LockResult r = a->release("lock-0");
  EXPECT_EQ(r.outcome, OpType::kFail);
  EXPECT_NE(r.error.find("not held on a quorum"), std::string::npos) << r.error;
}

TEST(RedlockTest, ExtendNeedsAQuorumWithinTheValidity) {
  TestCluster c(5);
  auto a = make_lock("redlock", no_retries(c.options()));
  ASSERT_EQ(a->acquire("lock-0", milliseconds(300)).outcome, OpType::kOk);
  LockResult e = a->extend("lock-0", milliseconds(10000));
  ASSERT_EQ(e.outcome, OpType::kOk) << e.error;
  EXPECT_GT(*e.validity_ms, 300);
  EXPECT_GT(c.conn(0)->command({"PTTL", "lock-0"}).integer().value_or(0), 5000);
  // Another client takes three nodes' keys away (as if they had expired and been taken): no quorum to extend.
  for (size_t n = 0; n < 3; ++n) c.conn(n)->command({"SET", "lock-0", "someone-else"});
  LockResult lost = a->extend("lock-0", milliseconds(10000));
  EXPECT_EQ(lost.outcome, OpType::kFail);
}

TEST(NodeFanoutTest, ParallelWaitsForOneTimeoutSequentialForEach) {
  TestCluster c(5);
  c.cluster->pause(1);
  c.cluster->pause(3);
  const milliseconds op(500);
  std::vector<Endpoint> eps = c.options().nodes;
  NodeFanout parallel(eps, op, op, FanoutStrategy::kParallel);
  NodeFanout sequential(eps, op, op, FanoutStrategy::kSequential);

  auto t0 = std::chrono::steady_clock::now();
  auto replies = parallel.run_all({"SET", "k", "v"});
  const int64_t parallel_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  auto seq_replies = sequential.run_all({"SET", "k", "v"});
  const int64_t sequential_ms = ms_since(t0);

  for (auto* rs : {&replies, &seq_replies}) {
    for (size_t n : {0, 2, 4}) EXPECT_TRUE((*rs)[n].is_status("OK")) << "node " << n << ": " << (*rs)[n].text;
    for (size_t n : {1, 3}) EXPECT_EQ((*rs)[n].status, RedisStatus::kTimeout) << "node " << n;
  }
  // Parallel: the two paused nodes time out together; sequential: one after the other.
  EXPECT_GE(parallel_ms, op.count());
  EXPECT_LT(parallel_ms, 2 * op.count());
  EXPECT_GE(sequential_ms, 2 * op.count());
  c.cluster->resume(1);
  c.cluster->resume(3);
}

TEST(NodeFanoutTest, RefusedConnectionIsNotSentAndAKilledNodeIsNoticedBetweenRounds) {
  TestCluster c(3);
  NodeFanout f(c.options().nodes, milliseconds(300), milliseconds(300), FanoutStrategy::kParallel);
  auto ok = f.run_all({"PING"});
  for (const auto& r : ok) EXPECT_TRUE(r.is_status("PONG")) << r.text;
  c.cluster->kill(1);  // its connection is now dead, unknown to the fan-out
  auto after = f.run_all({"PING"});
  EXPECT_TRUE(after[0].is_status("PONG"));
  EXPECT_EQ(after[1].status, RedisStatus::kNotSent) << after[1].text;  // not kClosed: nothing was written
  EXPECT_TRUE(after[2].is_status("PONG"));
  c.cluster->restart(1);
  auto back = f.run_all({"PING"});
  EXPECT_TRUE(back[1].is_status("PONG")) << back[1].text;
}

TEST(NodeFanoutTest, ErrorRepliesAreRepliesThatDefinitelyFailed) {
  TestCluster c(2);
  NodeFanout f(c.options().nodes, milliseconds(300), milliseconds(300), FanoutStrategy::kSequential);
  auto r = f.run({{"NOSUCHCOMMAND"}, {}});
  EXPECT_EQ(r[0].status, RedisStatus::kReply);
  EXPECT_TRUE(r[0].definitely_failed());
  EXPECT_EQ(r[1].text, "skipped");
}

}  // namespace
}  // namespace lockcheck
