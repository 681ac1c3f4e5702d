// The Remote seam's ZooKeeper kind (cluster/zookeeper_remote.cc) on its local side: three members on this
// machine's loopback through RemoteCluster and LocalRemote (tests/support/loopback_cluster.h), the code the
// docker and ssh backends run, without root, Docker or sshd: files (zoo.cfg, myid), the background start, `srvr`
// readiness, one leader, kill / restart / pause / resume, the clock refusal, the logs fetched and nothing left.
// A host without the named java fails the start at once, naming it. (Cuts need a host per member:
// docker_run_test and ssh_cluster_test.)
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <boost/filesystem.hpp>

#include "cluster/zookeeper_common.h"
#include "sys/process.h"
#include "tests/support/loopback_cluster.h"
#include "tests/support/redis_test_server.h"
#include "tests/support/temp_dir.h"
#include "tests/support/zookeeper_remote_checks.h"
#include "tests/support/zookeeper_test_cluster.h"

namespace lockcheck {
namespace {

namespace fs = boost::filesystem;
using std::chrono::milliseconds;

// True when nothing listens on (or holds) port on any address now (racy, as pick_free_port).
bool port_is_free(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// n client ports whose quorum and election ports (+707, +1707) are free too, all distinct.
std::vector<int> member_ports(size_t n) {
  std::vector<int> out;
  std::set<int> taken;
  for (int tries = 0; out.size() < n && tries < 500; ++tries) {
    const int p = testing_support::pick_free_port();
    const std::vector<int> three = {p, zookeeper_quorum_port(p), zookeeper_election_port(p)};
    bool ok = three.back() <= 65535;
    for (int q : three) ok = ok && !taken.count(q) && port_is_free(q);
    if (!ok) continue;
    taken.insert(three.begin(), three.end());
    out.push_back(p);
  }
  return out;
}

TEST(ZooKeeperRemoteTest, MembersOnALocalRemoteStartFaultAndAreRemovedAtStop) {
  LOCKCHECK_NEED_ZOOKEEPER();
  TempDir dir("lockcheck-zk-remote");
  const std::string run_dir = dir.str() + "/run", work_dir = dir.str() + "/host";
  RunConfig config;
  config.server = ServerKind::kZooKeeper;
  config.nodes = 3;
  config.concurrency = 1;
  config.ttl_ms = 2000;
  const std::vector<int> ports = member_ports(3);
  ASSERT_EQ(ports.size(), 3u);
  std::string folder;
  {
    LoopbackCluster c(config, run_dir, work_dir, "redis-server", ports);
    EXPECT_EQ(c.server(), ServerKind::kZooKeeper);
    const auto t0 = std::chrono::steady_clock::now();
    c.start();
    std::cout << "[ zk       ] loopback: 3 members serving, one leader, in "
              << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count() << " ms\n";
    std::vector<Endpoint> all;
    for (const auto& n : c.nodes()) all.push_back(n.endpoint);
    EXPECT_EQ(zookeeper_ready_error(all, milliseconds(2000)), "");
    const auto leader = c.leader();
    ASSERT_TRUE(leader.has_value());
    EXPECT_EQ(zookeeper_srvr(all[*leader], milliseconds(2000))->mode, "leader");

    folder = work_dir + "/lockcheck-" + c.run_id();
    std::ifstream cfg(folder + "/n2/zoo.cfg"), myid(folder + "/n2/data/myid");
    const std::string text((std::istreambuf_iterator<char>(cfg)), std::istreambuf_iterator<char>());
    std::string id;
    myid >> id;
    EXPECT_EQ(id, "2");
    EXPECT_NE(text.find("server.2=0.0.0.0:" + std::to_string(zookeeper_quorum_port(ports[1])) + ":" +
                        std::to_string(zookeeper_election_port(ports[1]))),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("server.1=127.0.0.1:" + std::to_string(zookeeper_quorum_port(ports[0])) + ":" +
                        std::to_string(zookeeper_election_port(ports[0]))),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("tickTime=1000"), std::string::npos) << text;  // from --ttl-ms 2000

    // kill the leader; the two others elect one; it restarts and rejoins.
    c.kill(*leader);
    EXPECT_FALSE(c.is_running(*leader));
    std::vector<Endpoint> others;
    for (size_t n = 0; n < all.size(); ++n) {
      if (n != *leader) others.push_back(all[n]);
    }
    EXPECT_EQ(testing_util::wait_zookeeper_ready(others, milliseconds(30000)), "");
    c.restart(*leader);
    EXPECT_EQ(testing_util::wait_zookeeper_ready(all, milliseconds(30000)), "");
    const size_t p = (*leader + 1) % all.size();
    c.pause(p);
    EXPECT_FALSE(zookeeper_srvr(all[p], milliseconds(500)).has_value()) << "a paused member answered";
    c.resume(p);
    EXPECT_EQ(testing_util::wait_zookeeper_ready(all, milliseconds(30000)), "");
    try {
      c.set_clock_offset(0, std::chrono::seconds(60));
      ADD_FAILURE() << "a clock fault reached a ZooKeeper member";
    } catch (const ClusterError& e) {
      EXPECT_NE(std::string(e.what()).find("nanoTime"), std::string::npos) << e.what();
    }
    c.stop();
  }
  EXPECT_FALSE(fs::exists(folder)) << "left: " << folder;
  for (const char* n : {"n1", "n2", "n3"}) {
    std::ifstream log(run_dir + "/nodes/" + n + ".log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("QuorumPeer"), std::string::npos) << n;
  }
}

// The hosts file's java (RemoteHost::programs["java"]) names a program the host does not have: the start fails at
// once naming it, not after the readiness wait; nothing is left.
TEST(ZooKeeperRemoteTest, AHostWithoutItsJavaFailsTheStartNamingIt) {
  TempDir dir("lockcheck-zk-remote");
  const std::string work_dir = dir.str() + "/host";
  RunConfig config;
  config.server = ServerKind::kZooKeeper;
  config.nodes = 1;
  config.concurrency = 1;
  LoopbackCluster c(config, dir.str() + "/run", work_dir, "redis-server", member_ports(1),
                    {{"java", "/nonexistent/lockcheck-test/java"}});
  const auto t0 = std::chrono::steady_clock::now();
  try {
    c.start();
    ADD_FAILURE() << "started without java";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/lockcheck-test/java: not found on this host"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_FALSE(fs::exists(work_dir + "/lockcheck-" + c.run_id()));
}

}  // namespace
}  // namespace lockcheck
