// The replicated topology of LocalCluster (a master, replicas, three Sentinels) and the single-failover lock:
// locking through Sentinel, following a failover, the lost lock after a failover that the Redlock article
// describes, and what --wait changes.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <thread>

#include "tests/support/lock_test_util.h"

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::make_lock;
using testing_util::TestCluster;

// The master the first Sentinel that answers names, or nullopt.
std::optional<Endpoint> sentinel_master(const Cluster& c) {
  for (const auto& s : c.sentinels()) {
    RedisConn conn(s.endpoint, milliseconds(300), milliseconds(500));
    Reply r = conn.command({"SENTINEL", "get-master-addr-by-name", kSentinelMasterName});
    const redisReply* raw = r.raw();
    if (r.ok() && raw && raw->type == REDIS_REPLY_ARRAY && raw->elements == 2) {
      return Endpoint{raw->element[0]->str, std::atoi(raw->element[1]->str)};
    }
  }
  return std::nullopt;
}

// Waits (bounded) until the Sentinels name a master other than `old`; returns it.
std::optional<Endpoint> wait_for_new_master(const Cluster& c, const Endpoint& old, std::chrono::seconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  while (std::chrono::steady_clock::now() < until) {
    auto m = sentinel_master(c);
    if (m && !(*m == old)) {
      // A promoted replica answers ROLE master once the failover has reached it.
      RedisConn conn(*m, milliseconds(300), milliseconds(500));
      Reply role = conn.command({"ROLE"});
      const redisReply* raw = role.raw();
      if (role.ok() && raw && raw->type == REDIS_REPLY_ARRAY && raw->elements > 0 &&
          std::string(raw->element[0]->str) == "master") {
        return m;
      }
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  return std::nullopt;
}

// Tries acquire until ok or the bound passes (the client sees refused connections until the failover).
LockResult acquire_within(LockClient& l, const std::string& key, milliseconds ttl, std::chrono::seconds bound) {
  const auto until = std::chrono::steady_clock::now() + bound;
  LockResult r;
  do {
    r = l.acquire(key, ttl);
    if (r.outcome == OpType::kOk) return r;
    std::this_thread::sleep_for(milliseconds(100));
  } while (std::chrono::steady_clock::now() < until);
  return r;
}

bool exists_on(const Endpoint& ep, const std::string& key) {
  RedisConn conn(ep, milliseconds(300), milliseconds(1000));
  auto v = conn.command({"EXISTS", key}).integer();
  return v && *v == 1;
}

TEST(ReplicatedClusterTest, StartsAMasterReplicasAndThreeSentinels) {
  TestCluster c(3, "replicated");
  ASSERT_EQ(c.cluster->nodes().size(), 3u);
  EXPECT_EQ(c.cluster->nodes()[0].role, NodeRole::kMaster);
  EXPECT_EQ(c.cluster->nodes()[1].role, NodeRole::kReplica);
  ASSERT_EQ(c.cluster->sentinels().size(), 3u);
  EXPECT_EQ(c.cluster->sentinels()[0].name, "s1");
  EXPECT_EQ(c.cluster->sentinels()[0].role, NodeRole::kSentinel);
  auto m = sentinel_master(*c.cluster);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(*m, c.cluster->nodes()[0].endpoint);
  // A write on the master reaches the replicas.
  auto master = c.conn(0);  // WAIT waits for this connection's own writes
  master->command({"SET", "x", "1"});
  EXPECT_EQ(master->command({"WAIT", "2", "2000"}).integer().value_or(0), 2);
  EXPECT_TRUE(c.exists(1, "x"));
  EXPECT_TRUE(c.exists(2, "x"));
  // Replicas refuse writes.
  Reply w = c.conn(1)->command({"SET", "y", "1"});
  EXPECT_TRUE(w.is_error());
}

// What a run's config gives the nodes and Sentinels: --sentinel-parallel-syncs reaches Sentinel's monitor, and a
// full resync starts at once (Redis 7's default diskless-sync delay of 5 s made every start and every resync
// after a failover 5 s late, and WAIT on a promoted master time out meanwhile).
TEST(ReplicatedClusterTest, TheRunConfigReachesSentinelAndTheNodesResyncAtOnce) {
  TempDir dir;
  RunConfig rc;
  testing_util::LocalClusterSpec o;
  o.nodes = 3;
  o.options = {{"topology", "replicated"}, {"sentinel_parallel_syncs", 2}};
  o.clock_shim = false;
  auto cp = testing_util::start_local_cluster(o, dir.path());
  ServerCluster& cluster = *cp;
  RedisConn s(cluster.sentinels()[0].endpoint, milliseconds(300), milliseconds(1000));
  Reply m = s.command({"SENTINEL", "master", kSentinelMasterName});
  const redisReply* raw = m.raw();
  ASSERT_TRUE(m.ok() && raw && raw->type == REDIS_REPLY_ARRAY) << m.error;
  std::string parallel_syncs;
  for (size_t i = 0; i + 1 < raw->elements; i += 2) {
    if (std::string(raw->element[i]->str) == "parallel-syncs") parallel_syncs = raw->element[i + 1]->str;
  }
  EXPECT_EQ(parallel_syncs, "2");
  for (size_t n = 0; n < cluster.nodes().size(); ++n) {
    RedisConn c(cluster.nodes()[n].endpoint, milliseconds(300), milliseconds(1000));
    Reply d = c.command({"CONFIG", "GET", "repl-diskless-sync-delay"});
    ASSERT_TRUE(d.ok() && d.raw()->type == REDIS_REPLY_ARRAY && d.raw()->elements == 2) << d.error;
    EXPECT_STREQ(d.raw()->element[1]->str, "0") << cluster.nodes()[n].name;
  }
  cluster.stop();
}

TEST(SingleFailoverTest, ReachesTheMasterThroughItsProxyLink) {
  // single-failover maps the address Sentinel reports (n1's own) to this client's fault-proxy link for n1:
  // cutting that link makes the client's SET time out instead of bypassing the proxy.
  TestCluster c(3, "replicated", testing_util::Proxy::kOn);
  auto a = make_lock("single-failover", c.options());
  ASSERT_EQ(a->acquire("lock-0", milliseconds(10000)).outcome, OpType::kOk);
  ASSERT_EQ(a->release("lock-0").outcome, OpType::kOk);
  c.cluster->cut("c0", "n1");
  LockResult cut = a->acquire("lock-0", milliseconds(10000));
  EXPECT_EQ(cut.outcome, OpType::kInfo) << cut.error;
  c.cluster->heal_all();
}

TEST(SingleFailoverTest, NeedsSentinels) {
  TestCluster c(1);
  EXPECT_THROW(make_lock("single-failover", c.options()), std::invalid_argument);
}

TEST(SingleFailoverTest, LocksOnTheMasterSentinelNamesAndFollowsAFailover) {
  TestCluster c(3, "replicated");
  auto a = make_lock("single-failover", c.options());
  auto b = make_lock("single-failover", c.options());
  LockResult r = a->acquire("lock-0", milliseconds(10000));
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  EXPECT_TRUE(c.exists(0, "lock-0"));
  EXPECT_EQ(b->acquire("lock-0", milliseconds(10000)).outcome, OpType::kFail);
  ASSERT_EQ(a->release("lock-0").outcome, OpType::kOk);
  EXPECT_FALSE(c.exists(0, "lock-0"));

  const Endpoint old_master = c.cluster->nodes()[0].endpoint;
  c.cluster->kill(0);
  auto promoted = wait_for_new_master(*c.cluster, old_master, std::chrono::seconds(30));
  ASSERT_TRUE(promoted.has_value()) << "no failover within 30 s";
  LockResult after = acquire_within(*b, "lock-1", milliseconds(10000), std::chrono::seconds(10));
  ASSERT_EQ(after.outcome, OpType::kOk) << after.error;
  EXPECT_TRUE(exists_on(*promoted, "lock-1"));
  ASSERT_EQ(b->release("lock-1").outcome, OpType::kOk);
}

// The scenario of the Redlock article: the master acknowledges the lock and dies before any replica has it;
// Sentinel promotes a replica, and a second client takes the same lock while the first still holds it.
// The replication lag is made certain instead of lucky: the replicas are paused and their links cut by the
// master (CLIENT KILL TYPE replica) before the lock is taken, so the SET stays on the master (a paused replica
// with a live link would still receive it into its socket buffer).
TEST(SingleFailoverTest, AFailoverBeforeReplicationGrantsTheLockTwice) {
  TestCluster c(3, "replicated");
  auto a = make_lock("single-failover", c.options());
  auto b = make_lock("single-failover", c.options());
  c.cluster->pause(1);
  c.cluster->pause(2);
  ASSERT_EQ(c.conn(0)->command({"CLIENT", "KILL", "TYPE", "replica"}).integer().value_or(0), 2);
  LockResult ra = a->acquire("lock-0", milliseconds(60000));
  ASSERT_EQ(ra.outcome, OpType::kOk) << ra.error;
  const Endpoint old_master = c.cluster->nodes()[0].endpoint;
  c.cluster->kill(0);  // the write never left the master
  c.cluster->resume(1);
  c.cluster->resume(2);
  ASSERT_TRUE(wait_for_new_master(*c.cluster, old_master, std::chrono::seconds(30)).has_value());
  LockResult rb = acquire_within(*b, "lock-0", milliseconds(60000), std::chrono::seconds(10));
  EXPECT_EQ(rb.outcome, OpType::kOk) << "b should get the lock a still holds (valid for " << *ra.validity_ms
                                     << " ms): " << rb.error;
}

TEST(SingleFailoverTest, WaitRefusesALockTheReplicasDidNotAcknowledge) {
  TestCluster c(3, "replicated");
  LockOptions o = c.options();
  o.extra["wait_replicas"] = 2;
  auto a = make_lock("single-failover", o);
  // Healthy: both replicas acknowledge.
  LockResult ok = a->acquire("lock-0", milliseconds(10000));
  ASSERT_EQ(ok.outcome, OpType::kOk) << ok.error;
  ASSERT_EQ(a->release("lock-0").outcome, OpType::kOk);
  // One replica paused: WAIT 2 sees one acknowledgement; the lock is given back.
  c.cluster->pause(2);
  LockResult refused = a->acquire("lock-0", milliseconds(10000));
  EXPECT_EQ(refused.outcome, OpType::kFail) << refused.error;
  EXPECT_NE(refused.error.find("WAIT: 1 of 2"), std::string::npos) << refused.error;
  EXPECT_FALSE(c.exists(0, "lock-0"));
  c.cluster->resume(2);
}

}  // namespace
}  // namespace lockcheck
