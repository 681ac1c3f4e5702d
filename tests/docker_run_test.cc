// End to end on Docker: a 20 s redlock run under partitions is recorded and checked, and afterwards no
// container, network or volume with the run's label remains.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/exit_codes.h"
#include "core/history.h"
#include "docker/docker_cli.h"
#include "docker/docker_cluster.h"
#include "harness/runner.h"
#include "sys/process.h"
#include "tests/support/ci.h"
#include "tests/support/etcd_test_cluster.h"
#include "tests/support/test_util.h"
#include "tests/support/zookeeper_test_cluster.h"

namespace lockcheck {
namespace {

// No engine: a skip, except under CI=true, where the Docker tests must run.

// Nothing labelled by any lockcheck run is left on the engine (tests run one at a time).
void expect_nothing_left() {
  for (const char* kind : {"container", "network", "volume"}) {
    std::vector<std::string> argv = {"docker", kind, "ls", "-q", "--filter", std::string("label=") + kDockerRunLabel};
    if (std::string(kind) == "container") argv.push_back("--all");  // stopped ones count too
    CommandResult r = run_command(argv, std::chrono::seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "") << kind << "s left behind";
  }
}

// A run of `lock` on Docker: four clients, seed 7, results in dir.
RunConfig docker_run_config(const TempDir& dir, const std::string& lock) {
  RunConfig c;
  c.cluster = "docker";
  c.lock = lock;
  c.concurrency = 4;
  c.seed = 7;
  c.progress = false;
  c.results_dir = dir.str() + "/results";
  return c;
}

TEST(DockerRunTest, RedlockUnderPartitionsIsRecordedCheckedAndCleanedUp) {
  LOCKCHECK_NEED(docker_engine_available(), "no Docker engine answered (`docker version`)");
  TempDir dir;
  RunConfig c = docker_run_config(dir, "redlock");
  c.nemesis = {"partition"};
  c.nemesis_interval_s = 2;
  c.time_limit_s = 20;
  c.ttl_ms = 1000;
  std::ostringstream out;
  RunOutcome o = run_test(c, out);
  ASSERT_FALSE(o.run_dir.empty()) << out.str();
  EXPECT_TRUE(o.exit_code == kExitValid || o.exit_code == kExitInvalid || o.exit_code == kExitUnknown) << out.str();
  History h = read_history(o.run_dir + "/history.jsonl");
  size_t acquires = 0, faults = 0;
  for (const auto& op : h) {
    acquires += op.f == "acquire" && op.is_ok();
    faults += op.process == kNemesis && op.is_invoke();
  }
  EXPECT_GT(acquires, 5u) << out.str();
  EXPECT_GT(faults, 2u) << out.str();
  EXPECT_TRUE(boost::filesystem::exists(o.run_dir + "/results.json"));
  expect_nothing_left();
}

// --topology cluster on Docker: the cluster lock on a Redis Cluster of containers under the failover
// nemesis's split brain (iptables in the master's namespace), aimed at the holder's key: the failovers promote
// the slot's replica, the clients follow it, the history is checked, nothing is left behind. (Whether a double
// grant follows is not asserted here: on Docker an acquire sent just before the aimed release is recorded can
// still reach the replica; measured 7 of 8 seeds with a double grant, docker/README.md.)
TEST(DockerRunTest, ARedisClusterSplitBrainPromotesTheReplicaAndTheClientsFollow) {
  LOCKCHECK_NEED(docker_engine_available(), "no Docker engine answered (`docker version`)");
  TempDir dir;
  RunConfig c;
  c.cluster = "docker";
  c.server_opts["topology"] = "cluster";
  c.nodes = 6;
  c.lock = "cluster";
  c.nemesis = {"failover:split-brain"};
  c.nemesis_targeting = "holder";
  c.nemesis_interval_s = 4;
  c.time_limit_s = 25;
  c.ttl_ms = 10000;
  c.seed = 3;
  c.progress = false;
  c.results_dir = dir.str() + "/results";
  std::ostringstream out;
  RunOutcome o = run_test(c, out);
  ASSERT_FALSE(o.run_dir.empty()) << out.str();
  EXPECT_TRUE(o.exit_code == kExitValid || o.exit_code == kExitInvalid) << out.str();
  History h = read_history(o.run_dir + "/history.jsonl");
  size_t failovers = 0, promoted = 0, acquires_after_promotion = 0;
  int64_t first_promotion_ns = -1;
  for (const auto& op : h) {
    if (op.process == kNemesis && op.f == "failover" && op.is_ok()) {
      ++failovers;
      const auto& d = op.value["detail"];
      if (d.contains("promoted") && d["promoted"].is_string() && d["promoted"] != d["master"]) {
        ++promoted;
        if (first_promotion_ns < 0) first_promotion_ns = op.time_ns;
      }
    }
    if (op.f == "acquire" && op.is_ok() && first_promotion_ns >= 0 && op.time_ns > first_promotion_ns) {
      ++acquires_after_promotion;
    }
  }
  EXPECT_GE(failovers, 2u) << out.str();
  // Every split brain promotes the slot's replica; the last may be cut short by the end of the run.
  EXPECT_GE(promoted + 1, failovers) << out.str();
  EXPECT_GE(promoted, 1u) << out.str();
  EXPECT_GT(acquires_after_promotion, 0u) << "the clients found the new master\n" << out.str();
  expect_nothing_left();
}

// --server etcd on Docker with etcd's own lock: a short healthy run is valid; one under member kills completes
// (every kill undone) and leaves nothing on the engine.
TEST(DockerRunTest, EtcdLockOnDockerHealthyIsValidAndUnderKillsCompletes) {
  LOCKCHECK_NEED(docker_engine_available(), "no Docker engine answered (`docker version`)");
  LOCKCHECK_NEED_ETCD();
  LOCKCHECK_NEED(testing_util::etcd_adapter_built(LOCKCHECK_CLIENTS_DIR),
                 "the etcd adapter is not built (scripts/build-clients; needs go): " << LOCKCHECK_CLIENTS_DIR);
  for (const bool kill : {false, true}) {
    TempDir dir;
    RunConfig c = docker_run_config(dir, "etcd");
    c.server = "etcd";
    if (kill) {
      c.nemesis = {"kill"};
      c.nemesis_interval_s = 2;
    }
    c.time_limit_s = kill ? 10 : 8;
    c.ttl_ms = 3000;
    std::ostringstream out;
    RunOutcome o = run_test(c, out);
    ASSERT_FALSE(o.run_dir.empty()) << out.str();
    if (!kill) {
      EXPECT_EQ(o.exit_code, kExitValid) << out.str();
    } else {
      EXPECT_TRUE(o.exit_code == kExitValid || o.exit_code == kExitInvalid || o.exit_code == kExitUnknown)
          << out.str();
    }
    History h = read_history(o.run_dir + "/history.jsonl");
    size_t acquires = 0, started = 0, undone = 0;
    for (const auto& op : h) {
      acquires += op.f == "acquire" && op.is_ok();
      if (op.process == kNemesis && op.is_ok() && op.value.is_object()) {
        started += op.value.value("phase", "") == "start";
        undone += op.value.value("phase", "") == "stop";
      }
    }
    // Healthy: the lock keeps changing hands. Under kills a member's death stalls the clients it served until
    // they move on and the dead session's lease (TTL 3 s) runs out, so a 10 s run may grant only a few.
    EXPECT_GT(acquires, kill ? 0u : 3u) << out.str();
    if (kill) {
      EXPECT_GT(started, 0u) << out.str();
      EXPECT_EQ(undone, started) << "a kill was not undone (its member restarted): " << out.str();
    }
    expect_nothing_left();
  }
}

// --server zookeeper on Docker with kazoo's lock (the adapter runs here, through the run's proxy links to the
// members' containers): a short healthy run is valid; one under member kills and partitions completes, every
// fault undone, and leaves nothing on the engine.
TEST(DockerRunTest, ZooKeeperKazooOnDockerHealthyIsValidAndUnderKillsCompletes) {
  LOCKCHECK_NEED(docker_engine_available(), "no Docker engine answered (`docker version`)");
  LOCKCHECK_NEED_ZOOKEEPER();
  LOCKCHECK_NEED(testing_util::kazoo_adapter_built(LOCKCHECK_CLIENTS_DIR),
                 testing_util::kNoKazoo << ": " << LOCKCHECK_CLIENTS_DIR);
  for (const bool faults : {false, true}) {
    TempDir dir;
    RunConfig c = docker_run_config(dir, "kazoo");
    c.server = "zookeeper";
    if (faults) {
      c.nemesis = {"kill", "partition"};
      c.nemesis_interval_s = 2;
    }
    c.time_limit_s = faults ? 12 : 8;
    c.ttl_ms = 2000;
    std::ostringstream out;
    RunOutcome o = run_test(c, out);
    ASSERT_FALSE(o.run_dir.empty()) << out.str();
    if (!faults) {
      EXPECT_EQ(o.exit_code, kExitValid) << out.str();
    } else {
      EXPECT_TRUE(o.exit_code == kExitValid || o.exit_code == kExitInvalid || o.exit_code == kExitUnknown)
          << out.str();
    }
    History h = read_history(o.run_dir + "/history.jsonl");
    size_t acquires = 0, started = 0, undone = 0;
    for (const auto& op : h) {
      acquires += op.f == "acquire" && op.is_ok();
      if (op.process == kNemesis && op.is_ok() && op.value.is_object()) {
        started += op.value.value("phase", "") == "start";
        undone += op.value.value("phase", "") == "stop";
      }
    }
    EXPECT_GT(acquires, faults ? 0u : 3u) << out.str();
    if (faults) {
      EXPECT_GT(started, 0u) << out.str();
      EXPECT_EQ(undone, started) << "a fault was not undone: " << out.str();
    }
    std::ifstream log(o.run_dir + "/nodes/n1.log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("QuorumPeer"), std::string::npos) << "n1's log was not fetched";
    expect_nothing_left();
  }
}

}  // namespace
}  // namespace lockcheck
