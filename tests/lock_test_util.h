// Helpers for the lock tests: a temporary folder, a real LocalCluster in it, LockOptions pointing at it, and
// direct connections to look at the nodes' keys. Everything is torn down by destructors (nodes killed and
// reaped, folder removed), so a failing assertion leaves nothing behind.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/filesystem.hpp>
#include <memory>
#include <string>

#include "cluster/local_cluster.h"
#include "sys/redis_conn.h"
#include "locks/lock_client.h"

namespace lockcheck {
namespace testing_util {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "/lockcheck-test-XXXXXX";
    if (::mkdtemp(&tmpl[0]) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    boost::system::error_code ec;
    boost::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

enum class Proxy { kOff, kOn };

// A started cluster in its own temporary folder. The lock tests talk to the nodes directly by default (no
// fault proxy, no clock shim): they test the algorithms against Redis, not the fault machinery.
struct TestCluster {
  explicit TestCluster(int nodes, Topology topology = Topology::kIndependent, Proxy proxy = Proxy::kOff) {
    LocalClusterOptions o;
    o.nodes = nodes;
    o.topology = topology;
    o.use_proxy = proxy == Proxy::kOn;
    o.use_clock_shim = false;
    o.nodes_dir = dir.path() + "/nodes";
    cluster = std::make_unique<LocalCluster>(o);
    cluster->start();
  }
  ~TestCluster() { cluster->stop(); }

  // Options for one client process: every node, the Sentinels, short timeouts.
  LockOptions options(std::chrono::milliseconds op_timeout = std::chrono::milliseconds(300)) const {
    LockOptions lo;
    for (size_t n = 0; n < cluster->nodes().size(); ++n) lo.nodes.push_back(cluster->endpoint_for("c0", n));
    for (const auto& n : cluster->nodes()) lo.node_addresses.push_back(n.endpoint);
    for (const auto& s : cluster->sentinels()) lo.sentinels.push_back(s.endpoint);
    lo.op_timeout = op_timeout;
    lo.connect_timeout = op_timeout;
    return lo;
  }

  // A direct connection to node n, to look at keys.
  std::unique_ptr<RedisConn> conn(size_t n) const {
    return std::make_unique<RedisConn>(cluster->nodes().at(n).endpoint, std::chrono::milliseconds(500),
                                       std::chrono::milliseconds(2000));
  }
  bool exists(size_t n, const std::string& key) const {
    auto v = conn(n)->command({"EXISTS", key}).integer();
    return v && *v == 1;
  }

  TempDir dir;
  std::unique_ptr<LocalCluster> cluster;
};

inline std::unique_ptr<LockClient> make_lock(const std::string& name, const LockOptions& o) {
  const LockAlgorithm* a = find_lock_algorithm(name);
  if (a == nullptr) throw std::invalid_argument("unknown lock " + name);
  return a->make(o);
}

}  // namespace testing_util
}  // namespace lockcheck
