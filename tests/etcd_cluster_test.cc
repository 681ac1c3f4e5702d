// The etcd backend (cluster/etcd_cluster.h) against real etcd members (label `etcd`): a five-member cluster
// starts with one leader and every member healthy and stops leaving no process; peer links go through the fault
// proxy (isolating the leader from its peers elects another); kill, restart, pause; clock faults are refused
// (the clock shim does not reach a Go program). Also the configuration rules of --server etcd (no etcd needed).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "core/config.h"
#include "harness/plan.h"
#include "tests/support/etcd_test_cluster.h"

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::wait_for_leader;
using testing_util::EtcdTestCluster;

bool alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }


TEST(EtcdCluster, StartsWithOneLeaderAndStopsLeavingNothing) {
  LOCKCHECK_NEED_ETCD();
  std::vector<pid_t> pids;
  {
    const auto t0 = std::chrono::steady_clock::now();
    EtcdTestCluster c;
    std::cout << "[ etcd     ] 5 members started, leader elected, all healthy in "
              << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count() << " ms\n";
    ASSERT_EQ(c.cluster->nodes().size(), 5u);
    EXPECT_EQ(c.cluster->server(), ServerKind::kEtcd);
    EXPECT_TRUE(c.cluster->leader().has_value());
    for (size_t n = 0; n < 5; ++n) {
      EXPECT_TRUE(c.cluster->is_running(n));
      pids.push_back(c.cluster->pid(n));
      EXPECT_TRUE(alive(pids.back()));
      std::ifstream log(c.cluster->nodes()[n].log_path);
      EXPECT_TRUE(log.good()) << c.cluster->nodes()[n].log_path;
    }
    const auto t1 = std::chrono::steady_clock::now();
    c.cluster->stop();
    std::cout << "[ etcd     ] stopped in "
              << std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t1).count() << " ms\n";
    // The data dirs go with stop() (each member preallocates a 64 MB log); the logs stay in the run folder.
    for (const auto& n : c.cluster->nodes()) {
      EXPECT_FALSE(std::filesystem::exists(c.dir.path() + "/nodes/" + n.name + "/data")) << n.name;
      EXPECT_TRUE(std::filesystem::exists(n.log_path)) << n.log_path;
    }
  }
  for (pid_t p : pids) EXPECT_FALSE(alive(p)) << p;
}

TEST(EtcdCluster, IsolatingTheLeaderFromItsPeersElectsAnother) {
  LOCKCHECK_NEED_ETCD();
  EtcdTestCluster c;
  auto leader = c.cluster->leader();
  ASSERT_TRUE(leader);
  const std::string victim = c.cluster->nodes()[*leader].name;
  for (const auto& n : c.cluster->nodes()) {
    if (n.name != victim) c.cluster->cut(victim, n.name);
  }
  // Raft traffic goes through the proxy: the majority stops hearing the leader and elects another.
  auto next = wait_for_leader(*c.cluster, leader, milliseconds(20000));
  EXPECT_TRUE(next.has_value()) << "no new leader after cutting " << victim << " from its peers";
  c.cluster->heal_all();
}

TEST(EtcdCluster, KillRestartPauseAndResume) {
  LOCKCHECK_NEED_ETCD();
  EtcdTestCluster c;
  auto leader = c.cluster->leader();
  ASSERT_TRUE(leader);
  const size_t follower = (*leader + 1) % 5;
  const pid_t before = c.cluster->pid(follower);
  c.cluster->kill(follower);
  EXPECT_FALSE(c.cluster->is_running(follower));
  EXPECT_FALSE(alive(before));
  EXPECT_TRUE(wait_for_leader(*c.cluster, std::nullopt, milliseconds(10000)).has_value());
  c.cluster->restart(follower);  // the same data dir and ports: it rejoins as itself
  EXPECT_TRUE(c.cluster->is_running(follower));
  EXPECT_NE(c.cluster->pid(follower), before);

  c.cluster->pause(*leader);  // SIGSTOP: the others elect a new leader
  EXPECT_TRUE(wait_for_leader(*c.cluster, leader, milliseconds(20000)).has_value());
  c.cluster->resume(*leader);
}

TEST(EtcdCluster, ClockFaultsAreRefused) {
  LOCKCHECK_NEED_ETCD();
  EtcdTestCluster c(1, false);
  EXPECT_THROW(c.cluster->set_clock_offset(0, std::chrono::seconds(10)), ClusterError);
}

ConfigError config_error(const RunConfig& c) {
  try {
    validate(c);
  } catch (const ConfigError& e) {
    return e;
  }
  return ConfigError("");
}

TEST(EtcdConfig, ServerFlagAndWhatEtcdRefuses) {
  RunConfig c;
  EXPECT_EQ(std::string(to_string(c.server)), "redis");
  EXPECT_EQ(server_from_string("etcd"), ServerKind::kEtcd);
  EXPECT_THROW(server_from_string("consul"), ConfigError);
  nlohmann::json j;
  to_json(j, c);
  EXPECT_EQ(j["server"], "redis");

  c.server = ServerKind::kEtcd;
  c.lock = "single";
  EXPECT_NE(std::string(config_error(c).what()).find("needs --server redis"), std::string::npos);
  c.lock = "etcd";
  for (const char* backend : {"docker", "ssh"}) {  // every backend runs etcd
    c.cluster = backend;
    if (c.cluster == "ssh") c.hosts = "hosts.json";
    EXPECT_NO_THROW(validate_fields(c)) << backend;
  }
  c.cluster = "local";
  c.hosts.clear();
  c.nemesis_targeting = "holder";
  c.nemesis = {"pause"};
  EXPECT_NE(std::string(config_error(c).what()).find("EXISTS"), std::string::npos);
  c.nemesis_targeting = "random";
  c.nemesis = {"clock"};
  EXPECT_NE(std::string(config_error(c).what()).find("vDSO"), std::string::npos);
  c.nemesis = {"failover"};
  EXPECT_NE(std::string(config_error(c).what()).find("Sentinel"), std::string::npos);
  c.nemesis = {};
  c.topology = Topology::kReplicated;
  EXPECT_NE(std::string(config_error(c).what()).find("--topology replicated"), std::string::npos);

  RunConfig r;
  r.lock = "etcd";
  EXPECT_NE(std::string(config_error(r).what()).find("needs --server etcd"), std::string::npos);
}

}  // namespace
}  // namespace lockcheck
