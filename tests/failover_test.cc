// Node-to-node links through the fault proxy and the failover anomalies they make findable (issue 12):
// replication and Sentinel traffic of the replicated topology can be cut like a client's link, a killed node
// behind the proxy refuses connections (a definite failure, not an indeterminate close), and a whole run of
// `single-failover` under the split-brain failover finds the lost lock.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "harness/exit_codes.h"
#include "harness/runner.h"
#include "lock_test_util.h"

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
  TestCluster c(3, Topology::kReplicated, Proxy::kOn);
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
  EXPECT_TRUE(eventually([&] { return get(nodes[2].own_endpoint(), "k") == std::string("during-cut"); },
                         milliseconds(3000)));
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_FALSE(get(nodes[1].own_endpoint(), "k").has_value()) << "n2 replicated across the cut";
  c.cluster->heal_all();
  EXPECT_TRUE(eventually([&] { return get(nodes[1].own_endpoint(), "k") == std::string("during-cut"); },
                         milliseconds(5000)));
}

TEST(PeerLinksTest, AKilledNodeBehindTheProxyRefusesConnections) {
  TestCluster c(1, Topology::kIndependent, Proxy::kOn);
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

// The first mutex checker's verdict in a run's results.json ("" when absent).
std::string mutex_verdict(const std::string& run_dir) {
  std::ifstream in(run_dir + "/results.json");
  json r = json::parse(in);
  for (const auto& ch : r["checkers"]) {
    if (ch["checker"] == "mutex") return ch["valid"];
  }
  return "";
}

TEST(FailoverRunTest, ASplitBrainFailoverLosesSingleFailoversLock) {
  testing_util::TempDir dir;
  RunConfig c;
  c.results_dir = dir.path() + "/results";
  c.progress = false;
  c.seed = 1;
  c.lock = "single-failover";
  c.topology = Topology::kReplicated;
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

}  // namespace
}  // namespace lockcheck
