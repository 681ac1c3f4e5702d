// Helpers for the lock tests: a temporary folder, a real local Redis cluster in it, LockOptions pointing at it, and
// direct connections to look at the nodes' keys. Everything is torn down by destructors (nodes killed and
// reaped, folder removed), so a failing assertion leaves nothing behind.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/filesystem.hpp>
#include <memory>
#include <string>

#include "locks/adapters.h"
#include "locks/lock_client.h"
#include "sys/redis_conn.h"
#include "tests/support/local_cluster.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace testing_util {

enum class Proxy { kOff, kOn };

// A started cluster in its own temporary folder. The lock tests talk to the nodes directly by default (no
// fault proxy, no clock shim): they test the algorithms against Redis, not the fault machinery.
// topology: the redis kind's --topology (independent, replicated, cluster).
struct TestCluster {
  explicit TestCluster(int nodes, const std::string& topology = "independent", Proxy proxy = Proxy::kOff) {
    LocalClusterSpec s;
    s.nodes = nodes;
    s.options = {{"topology", topology}};
    s.proxy = proxy == Proxy::kOn;
    s.clock_shim = false;
    cluster = start_local_cluster(s, dir.path());
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
  std::unique_ptr<ServerCluster> cluster;
};

inline std::unique_ptr<LockClient> make_lock(const std::string& name, const LockOptions& o) {
  const LockAlgorithm* a = find_lock_algorithm(name);
  if (a == nullptr) throw std::invalid_argument("unknown lock " + name);
  return a->make(o);
}

// Before a fault: a client of lock `name` that the cluster granted a lock. What is checked is that it can, not how
// fast: an acquire that did not end ok (on a loaded machine the first one of a fresh cluster can outlast the op
// timeout) is tried again by a fresh client, as a run retires a client after an indeterminate answer; 3 tries.
// nullptr (and a test failure) when none was granted.
inline std::unique_ptr<LockClient> warmed_up_lock(const std::string& name, const LockOptions& o,
                                                  std::chrono::milliseconds ttl) {
  LockResult r;
  for (int i = 0; i < 3; ++i) {
    auto lock = make_lock(name, o);
    r = lock->acquire("warm-up-" + std::to_string(i), ttl);
    if (r.outcome == OpType::kOk) return lock;
  }
  ADD_FAILURE() << name << ": no warm-up acquire was granted in 3 tries: " << r.error;
  return nullptr;
}

// The contract suites iterate the registries, so a new lock is tested without editing a test list.
// Every lock that speaks plain RESP (Redis nodes each on its own) and runs in this process (external clients and
// the shipped adapters have suites of their own: external_lock_test, adapter_test).
inline std::vector<std::string> in_process_locks() {
  std::vector<std::string> names;
  for (const auto& a : lock_registry()) {
    if (std::string(a.protocol) == "resp" && !a.external) names.push_back(a.name);
  }
  return names;
}
// The shipped library adapters that speak plain RESP (etcd's and ZooKeeper's have suites of their own).
inline std::vector<std::string> adapter_names() {
  std::vector<std::string> names;
  for (const auto& a : lock_adapters()) {
    if (std::string(a.protocol) == "resp") names.push_back(a.name);
  }
  return names;
}
// A gtest parameter name from a registry name ("set-nx-ex-del" -> "set_nx_ex_del").
inline std::string param_name(std::string s) {
  for (auto& c : s) c = c == '-' ? '_' : c;
  return s;
}

}  // namespace testing_util
}  // namespace lockcheck
