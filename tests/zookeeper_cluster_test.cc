// The ZooKeeper backend (cluster/zookeeper_cluster.h) against real members (label `zookeeper`): a five-member
// ensemble starts with exactly one leader and stops leaving no process, data dir or JVM file; the members' version
// is read from the members; client links and both peer links go through the fault proxy (a cut client link
// stops answering; the leader cut from its peers is replaced); kill, restart, pause and resume; a session of
// --ttl-ms is granted as asked (kazoo, when Debian's python3-kazoo is there); clock faults are refused.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "cluster/server_builds.h"
#include "cluster/tcp_probe.h"
#include "cluster/zookeeper_common.h"
#include "sys/process.h"
#include "tests/support/zookeeper_test_cluster.h"

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::wait_for_leader;
using testing_util::ZooKeeperTestCluster;

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

int64_t ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
}


// The resident set of a process, kB (VmRSS); 0 when gone.
long rss_kb(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  long value = 0;
  while (in >> key) {
    if (key == "VmRSS:") {
      in >> value;
      return value;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

TEST(ZooKeeperCluster, StartsWithOneLeaderReadsItsVersionAndStopsLeavingNothing) {
  LOCKCHECK_NEED_ZOOKEEPER();
  std::vector<pid_t> pids;
  {
    const auto t0 = std::chrono::steady_clock::now();
    ZooKeeperTestCluster c;
    std::cout << "[ zookeeper] 5 members started, one leader, all serving in " << ms_since(t0) << " ms\n";
    ASSERT_EQ(c.cluster->nodes().size(), 5u);
    EXPECT_EQ(c.cluster->server(), ServerKind::kZooKeeper);
    EXPECT_TRUE(c.cluster->leader().has_value());
    for (size_t n = 0; n < 5; ++n) {
      EXPECT_TRUE(c.cluster->is_running(n));
      pids.push_back(c.cluster->pid(n));
      EXPECT_TRUE(alive(pids.back()));
      std::cout << "[ zookeeper] " << c.cluster->nodes()[n].name << " RSS " << rss_kb(pids.back()) / 1024 << " MiB\n";
      EXPECT_TRUE(std::filesystem::exists(c.dir.path() + "/nodes/n" + std::to_string(n + 1) + "/zoo.cfg"));
    }
    // The version, asked of each member (srvr), as a run records it.
    const auto versions = read_node_versions(*c.cluster, "");
    ASSERT_EQ(versions.size(), 5u);
    for (const auto& v : versions) EXPECT_EQ(v.rfind("3.", 0), 0u) << v;
    EXPECT_EQ(describe_node_versions(*c.cluster, versions), versions[0]);

    const auto t1 = std::chrono::steady_clock::now();
    c.cluster->stop();
    std::cout << "[ zookeeper] stopped in " << ms_since(t1) << " ms\n";
    for (const auto& n : c.cluster->nodes()) {
      EXPECT_FALSE(std::filesystem::exists(c.dir.path() + "/nodes/" + n.name + "/data")) << n.name;
      EXPECT_TRUE(std::filesystem::exists(n.log_path)) << n.log_path;
    }
  }
  for (pid_t p : pids) {
    EXPECT_FALSE(alive(p)) << p;
    // -XX:-UsePerfData: a SIGKILLed JVM leaves no /tmp/hsperfdata_USER/PID behind.
    for (const auto& d : std::filesystem::directory_iterator("/tmp")) {
      if (d.path().filename().string().rfind("hsperfdata_", 0) != 0) continue;
      EXPECT_FALSE(std::filesystem::exists(d.path() / std::to_string(p))) << d.path() / std::to_string(p);
    }
  }
}

TEST(ZooKeeperCluster, ClientLinksGoThroughTheProxy) {
  LOCKCHECK_NEED_ZOOKEEPER();
  ZooKeeperTestCluster c(3);
  const auto opts = c.options();
  ASSERT_EQ(opts.nodes.size(), 3u);
  for (size_t n = 0; n < 3; ++n) {
    EXPECT_NE(opts.nodes[n], c.cluster->nodes()[n].listen);  // a proxy link, not the member's own port
    EXPECT_TRUE(zookeeper_srvr(opts.nodes[n], milliseconds(2000)).has_value()) << n;
  }
  c.cluster->cut("c0", "n1");
  EXPECT_FALSE(zookeeper_srvr(opts.nodes[0], milliseconds(1000)).has_value());
  EXPECT_TRUE(zookeeper_srvr(opts.nodes[1], milliseconds(2000)).has_value());
  c.cluster->heal_all();
  EXPECT_TRUE(zookeeper_srvr(opts.nodes[0], milliseconds(2000)).has_value());
}

TEST(ZooKeeperCluster, CuttingTheLeaderFromItsPeersElectsAnother) {
  LOCKCHECK_NEED_ZOOKEEPER();
  ZooKeeperTestCluster c;
  const auto leader = c.cluster->leader();
  ASSERT_TRUE(leader);
  const std::string victim = c.cluster->nodes()[*leader].name;
  for (const auto& n : c.cluster->nodes()) {
    if (n.name != victim) c.cluster->cut(victim, n.name);
  }
  // Quorum and election traffic go through the proxy: the followers stop hearing the leader, elect another, and
  // the old one, without a quorum, stops leading.
  const auto t0 = std::chrono::steady_clock::now();
  const auto next = wait_for_leader(*c.cluster, leader, milliseconds(30000));
  EXPECT_TRUE(next.has_value()) << "no new leader after cutting " << victim << " from its peers";
  std::cout << "[ zookeeper] a new leader " << ms_since(t0) << " ms after the cut\n";
  const auto old = zookeeper_srvr(c.cluster->nodes()[*leader].listen, milliseconds(2000));
  EXPECT_TRUE(!old || old->mode != "leader") << victim << " still leads";
  c.cluster->heal_all();
  // Healed, the old leader rejoins as a follower: every member serves again with one leader. It may take a while:
  // fast leader election backs off its notifications, doubling up to 60 s, while a member finds no quorum.
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(70000);
  std::vector<Endpoint> all;
  for (const auto& n : c.cluster->nodes()) all.push_back(n.listen);
  std::string why = "not asked";
  while (std::chrono::steady_clock::now() < deadline && !(why = zookeeper_ready_error(all, milliseconds(1000))).empty())
    std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(why, "");
  std::cout << "[ zookeeper] every member serving again " << ms_since(t0) << " ms after the cut\n";
}

TEST(ZooKeeperCluster, KillRestartPauseAndResume) {
  LOCKCHECK_NEED_ZOOKEEPER();
  ZooKeeperTestCluster c;
  auto leader = c.cluster->leader();
  ASSERT_TRUE(leader);
  const size_t follower = (*leader + 1) % 5;
  const pid_t before = c.cluster->pid(follower);
  const Endpoint link = c.cluster->endpoint_for("c0", follower);
  EXPECT_TRUE(port_accepts(link, milliseconds(1000)));
  c.cluster->kill(follower);
  EXPECT_FALSE(c.cluster->is_running(follower));
  EXPECT_FALSE(alive(before));
  EXPECT_FALSE(port_accepts(link, milliseconds(500)));  // refused, as by the node
  EXPECT_EQ(c.cluster->leader(), leader);  // four of five: the same leader
  c.cluster->restart(follower);  // the same data dir and ports: it rejoins as itself
  EXPECT_TRUE(c.cluster->is_running(follower));
  EXPECT_NE(c.cluster->pid(follower), before);

  c.cluster->pause(*leader);  // SIGSTOP: the others elect a new leader
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(wait_for_leader(*c.cluster, leader, milliseconds(30000)).has_value());
  std::cout << "[ zookeeper] a new leader " << ms_since(t0) << " ms after pausing the old one\n";
  c.cluster->resume(*leader);
}

// A session asks for the TTL as its timeout; the ensemble's tickTime rule grants 1 s and 2 s as asked.
TEST(ZooKeeperCluster, SessionsOfTheTtlAreGrantedAsAsked) {
  LOCKCHECK_NEED_ZOOKEEPER();
  const bool kazoo = run_command({"/usr/bin/python3", "-c", "import kazoo"}, std::chrono::seconds(20)).ok();
  LOCKCHECK_NEED(kazoo, "Debian's python3-kazoo is not installed (apt-get install python3-kazoo)");
  for (const int64_t ttl : {1000, 2000}) {
    ZooKeeperTestCluster c(3, true, ttl);
    std::string hosts;
    for (const auto& e : c.options().nodes) hosts += (hosts.empty() ? "" : ",") + e.str();
    const auto r = run_command({"/usr/bin/python3", "-c",
                                "import sys\nfrom kazoo.client import KazooClient\n"
                                "k = KazooClient(hosts=sys.argv[1], timeout=float(sys.argv[2]) / 1000)\n"
                                "k.start(timeout=20)\nprint(k._session_timeout)\nk.stop()\n",
                                hosts, std::to_string(ttl)},
                               std::chrono::seconds(60));
    ASSERT_TRUE(r.ok()) << r.err;
    EXPECT_EQ(std::stoll(r.out), ttl) << describe(c.cluster->timing());
  }
}

TEST(ZooKeeperCluster, ClockFaultsAreRefused) {
  LOCKCHECK_NEED_ZOOKEEPER();
  ZooKeeperTestCluster c(1, false);  // one member: standalone
  try {
    c.cluster->set_clock_offset(0, std::chrono::seconds(10));
    FAIL() << "a clock fault was accepted";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("nanoTime"), std::string::npos) << e.what();
  }
  EXPECT_THROW(c.cluster->set_clock_rate(0, 1000000), ClusterError);
}

}  // namespace
}  // namespace lockcheck
