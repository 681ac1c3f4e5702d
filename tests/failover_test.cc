// Node-to-node links through the fault proxy and the failover anomalies they make findable:
// replication and Sentinel traffic of the replicated topology can be cut like a client's link, a killed node
// behind the proxy refuses connections (a definite failure, not an indeterminate close), and a whole run of
// `single-failover` under the split-brain failover finds the lost lock.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "core/exit_codes.h"
#include "harness/matrix.h"
#include "harness/runner.h"
#include "tests/support/lock_test_util.h"

namespace lockcheck {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using testing_util::Proxy;
using testing_util::TestCluster;

// Polls pred every 50 ms until it holds or limit passes; returns its last value.
template <typename Pred>
bool eventually(Pred pred, milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return true;
}

std::optional<std::string> get(const Endpoint& ep, const std::string& key) {
  RedisConn c(ep, milliseconds(300), milliseconds(500));
  return c.command({"GET", key}).str();
}

TEST(PeerLinksTest, ReplicationGoesThroughTheProxyAndACutStopsIt) {
  TestCluster c(3, "replicated", Proxy::kOn);
  const auto& nodes = c.cluster->nodes();
  // Every node is known by its shared proxy link, not by where it listens.
  for (const auto& n : nodes) EXPECT_NE(n.endpoint, n.own_endpoint()) << n.name;
  {
    RedisConn master(nodes[0].own_endpoint(), milliseconds(300), milliseconds(500));
    Reply info = master.command({"INFO", "replication"});
    ASSERT_TRUE(info.str());
    // The replicas announce their proxy links.
    EXPECT_NE(info.str()->find("port=" + std::to_string(nodes[1].endpoint.port)), std::string::npos) << *info.str();
    c.cluster->cut("n1", "n2");
    ASSERT_TRUE(master.command({"SET", "k", "during-cut"}).is_status("OK"));
  }
  EXPECT_TRUE(
      eventually([&] { return get(nodes[2].own_endpoint(), "k") == std::string("during-cut"); }, milliseconds(3000)));
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_FALSE(get(nodes[1].own_endpoint(), "k").has_value()) << "n2 replicated across the cut";
  c.cluster->heal_all();
  EXPECT_TRUE(
      eventually([&] { return get(nodes[1].own_endpoint(), "k") == std::string("during-cut"); }, milliseconds(5000)));
}

TEST(PeerLinksTest, AKilledNodeBehindTheProxyRefusesConnections) {
  TestCluster c(1, "independent", Proxy::kOn);
  RedisConn client(c.cluster->endpoint_for("c0", 0), milliseconds(300), milliseconds(500));
  ASSERT_TRUE(client.command({"PING"}).is_status("PONG"));
  c.cluster->kill(0);
  // The open connection learns of the death as a close (it may have been mid-request) ...
  Reply first = client.command({"PING"});
  EXPECT_FALSE(first.ok());
  // ... and every later attempt is refused at connect: the command certainly did not happen (fail, not info).
  for (int i = 0; i < 20; ++i) {
    Reply r = client.command({"SET", "k", "v"});
    ASSERT_EQ(r.status, RedisStatus::kNotSent) << "attempt " << i << ": " << r.error;
  }
  c.cluster->restart(0);
  EXPECT_TRUE(eventually([&] { return client.command({"PING"}).is_status("PONG"); }, milliseconds(3000)));
}

// The verdict of checker `name` in a run's results.json ("" when absent).
std::string verdict_of(const std::string& run_dir, const std::string& name) {
  std::ifstream in(run_dir + "/results.json");
  json r = json::parse(in);
  for (const auto& ch : r["checkers"]) {
    if (ch["checker"] == name) return ch["valid"];
  }
  return "";
}
std::string mutex_verdict(const std::string& run_dir) { return verdict_of(run_dir, "mutex"); }

TEST(FailoverRunTest, ASplitBrainFailoverLosesSingleFailoversLock) {
  TempDir dir;
  RunConfig c;
  c.results_dir = dir.path() + "/results";
  c.progress = false;
  c.seed = 1;
  c.lock = "single-failover";
  c.server_opts["topology"] = "replicated";
  c.nodes = 3;
  c.nemesis = {"failover:split-brain"};
  c.nemesis_targeting = "holder";
  c.nemesis_interval_s = 3;
  c.time_limit_s = 12;
  std::ostringstream out;
  RunOutcome o = run_test(c, out);
  ASSERT_FALSE(o.run_dir.empty()) << out.str();
  EXPECT_EQ(mutex_verdict(o.run_dir), "invalid") << out.str();
  EXPECT_EQ(o.exit_code, kExitInvalid) << out.str();
}

TEST(FindingsFailoverMatrixTest, Parses) {
  Matrix m = load_matrix("findings-failover", "results");
  ASSERT_EQ(m.entries.size(), 4u);
  for (const auto& e : m.entries) EXPECT_EQ(e.seeds.size(), 10u) << e.name;
  EXPECT_EQ(m.entries[3].config.server_opts.value("topology", ""), "cluster");
}

TEST(ClusterKeySlotTest, IsCrc16OfTheKeyOrItsHashTag) {
  EXPECT_EQ(cluster_key_slot("123456789"), 0x31C3);  // the CRC16/XMODEM check value
  EXPECT_EQ(cluster_key_slot("foo"), 12182);
  EXPECT_EQ(cluster_key_slot("{user1000}.following"), cluster_key_slot("{user1000}.followers"));
  EXPECT_EQ(cluster_key_slot("{user1000}.following"), cluster_key_slot("user1000"));
  EXPECT_EQ(cluster_key_slot("foo{}{bar}"), cluster_key_slot("foo{}{bar}"));  // an empty tag: the whole key
  EXPECT_NE(cluster_key_slot("foo{}{bar}"), cluster_key_slot("bar"));
}

TEST(ClusterLockTest, LocksKeysOnEveryMasterThroughTheProxyFollowingRedirections) {
  TestCluster c(6, "cluster", Proxy::kOn);
  const auto& nodes = c.cluster->nodes();
  ASSERT_EQ(nodes.size(), 6u);
  EXPECT_EQ(nodes[0].role, NodeRole::kMaster);
  EXPECT_EQ(nodes[5].role, NodeRole::kReplica);
  auto a = testing_util::make_lock("cluster", c.options());
  auto b = testing_util::make_lock("cluster", c.options());
  // Keys in slots of all three masters ("lock-0" .. "lock-9" spread over them).
  for (int i = 0; i < 10; ++i) {
    const std::string key = "lock-" + std::to_string(i);
    ASSERT_EQ(a->acquire(key, milliseconds(10000)).outcome, OpType::kOk) << key;
    EXPECT_EQ(b->acquire(key, milliseconds(10000)).outcome, OpType::kFail) << key;
    EXPECT_EQ(a->release(key).outcome, OpType::kOk) << key;
    EXPECT_EQ(b->acquire(key, milliseconds(10000)).outcome, OpType::kOk) << key;
    EXPECT_EQ(b->release(key).outcome, OpType::kOk) << key;
  }
  // A manual failover moves lock-0's slot to the master's replica: the clients' slot maps are stale, the old
  // master (now a replica) answers MOVED, and they follow it.
  const size_t slot = static_cast<size_t>(cluster_key_slot("lock-0"));
  size_t m = 0;
  while (slot > (m + 1) * kClusterSlots / 3 - 1) ++m;
  const size_t replica = 3 + m;  // replica k replicates master (k - 3) % 3
  {
    RedisConn r(nodes[replica].own_endpoint(), milliseconds(500), milliseconds(2000));
    ASSERT_TRUE(r.command({"CLUSTER", "FAILOVER"}).is_status("OK"));
  }
  ASSERT_TRUE(eventually(
      [&] {
        RedisConn r(nodes[replica].own_endpoint(), milliseconds(300), milliseconds(500));
        Reply role = r.command({"ROLE"});
        return role.raw() && role.raw()->type == REDIS_REPLY_ARRAY && role.raw()->elements > 0 &&
               std::string(role.raw()->element[0]->str) == "master";
      },
      milliseconds(10000)));
  EXPECT_EQ(a->acquire("lock-0", milliseconds(10000)).outcome, OpType::kOk);
  EXPECT_EQ(b->acquire("lock-0", milliseconds(10000)).outcome, OpType::kFail);
  EXPECT_TRUE(c.exists(replica, "lock-0"));
}

// The Redis Cluster split brain that really grants a held lock twice: the failover cuts the master of the
// holder's slot right after the holder's release (inside the release's record, before any client can send its
// next acquire), so the next grant exists on the cut-off master only (it
// keeps taking writes for cluster-node-timeout, 1 s); the majority promotes its replica about 2-3 s after the
// cut, and a client redirected there (CLUSTERDOWN, then a slot map refresh) is granted the same key while the
// first holder, with a 10 s lease, still uses it. Both mutex and lease must see it: a double grant within the
// first holder's lease, not a stale holder.
TEST(FailoverRunTest, ARedisClusterFailoverLosesTheClusterLock) {
  TempDir dir;
  RunConfig c;
  c.results_dir = dir.path() + "/results";
  c.progress = false;
  c.seed = 1;
  c.lock = "cluster";
  c.server_opts["topology"] = "cluster";
  c.nodes = 6;
  c.ttl_ms = 10000;
  c.hold_ms_min = 3000;  // the next holder still holds when the replica is promoted (2-3 s after the cut)
  c.nemesis = {"failover:split-brain"};
  c.nemesis_targeting = "holder";
  c.nemesis_interval_s = 3;
  c.time_limit_s = 30;
  std::ostringstream out;
  RunOutcome o = run_test(c, out);
  ASSERT_FALSE(o.run_dir.empty()) << out.str();
  EXPECT_EQ(verdict_of(o.run_dir, "lease"), "invalid") << out.str();
  EXPECT_EQ(mutex_verdict(o.run_dir), "invalid") << out.str();
  EXPECT_EQ(o.exit_code, kExitInvalid) << out.str();
}

}  // namespace
}  // namespace lockcheck
