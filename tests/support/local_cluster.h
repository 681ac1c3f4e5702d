// A cluster of any server kind on the local backend (cluster/server_cluster.h, LoopbackCluster), made the way a
// run makes it (its spec's options resolved, its build found, ServerSpec::make), for the tests that need real
// servers. The destructor stops it; with the TempDir beside it nothing is left behind.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cluster/server_cluster.h"
#include "harness/plan.h"

namespace lockcheck {
namespace testing_util {

struct LocalClusterSpec {
  std::string server = "redis";
  nlohmann::json options = nlohmann::json::object();  // the kind's options as given (--server-opt)
  int nodes = 5;
  bool proxy = true;        // network faults through the fault proxy (false: clients reach the nodes directly)
  bool clock_shim = true;   // where the kind has clock abilities
  bool power_shim = false;  // the power shim (power-loss)
  int concurrency = 5;      // client slots c0 ..
  int64_t ttl_ms = 1000;
  std::string version;      // --server-version ("": the kind's default build)
  uint64_t seed = 1;
  std::function<int()> draw_port;  // ClusterSetup::draw_port (empty: a free loopback port)
};

// The plan of a local cluster of spec, as a run resolves it (ConfigError for an unknown kind, a bad option, no
// such build).
inline Plan local_cluster_plan(const LocalClusterSpec& s) {
  RunConfig c;
  c.server = s.server;
  c.server_opts = s.options;
  c.nodes = s.nodes;
  c.nodes_given = true;
  c.concurrency = s.concurrency;
  c.ttl_ms = s.ttl_ms;
  c.seed = s.seed;
  c.server_version = s.version;
  return resolve_server_plan(c);
}

// A cluster of spec in run_dir (its nodes/ made there), not started.
inline std::unique_ptr<ServerCluster> make_local_cluster(const LocalClusterSpec& s, const std::string& run_dir) {
  const Plan plan = local_cluster_plan(s);
  ClusterSetup c;
  c.run_dir = run_dir;
  c.concurrency = s.concurrency;
  c.seed = s.seed;
  c.network_faults = s.proxy;
  c.clock_shim = s.clock_shim;
  c.power_shim = s.power_shim;
  c.draw_port = s.draw_port;
  return std::make_unique<LoopbackCluster>(plan_server_run(plan), c);
}

// Every node of c answers `version` when asked.
inline void expect_members_say(const ServerCluster& c, const std::string& version) {
  const auto versions = c.node_versions();
  ASSERT_EQ(versions.size(), c.nodes().size());
  for (size_t i = 0; i < versions.size(); ++i) EXPECT_EQ(versions[i], version) << c.nodes()[i].name;
}

// ... and started.
inline std::unique_ptr<ServerCluster> start_local_cluster(const LocalClusterSpec& s, const std::string& run_dir) {
  auto c = make_local_cluster(s, run_dir);
  c->start();
  return c;
}

}  // namespace testing_util
}  // namespace lockcheck
