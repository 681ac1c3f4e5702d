// A started ZooKeeper ensemble (servers/zookeeper.cc on the local backend) in its own temporary folder, for the tests labelled
// `zookeeper`. Without java or Debian's zookeeper jars the test skips with the reason, except under CI, where
// that is a failure. The destructor stops every member and removes the folder: nothing is left behind.
#pragma once

#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "locks/lock_client.h"
#include "sys/process.h"
#include "tests/support/ci.h"
#include "tests/support/cluster_waits.h"
#include "tests/support/local_cluster.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace testing_util {

inline bool zookeeper_installed() {
  return find_program("java").has_value() && ::access("/usr/share/java/zookeeper.jar", R_OK) == 0 &&
         ::access("/usr/share/java/slf4j-simple.jar", R_OK) == 0;
}
inline const char* kNoZooKeeper = "java or Debian's zookeeper is not installed (apt-get install zookeeper "
                                  "default-jdk-headless)";

// True when the kazoo adapter (build/clients/kazoo-lock.py, from scripts/build-clients) is in clients_dir and
// python3 is here; clients_dir becomes LOCKCHECK_CLIENTS_DIR for the runs of this process.
inline bool kazoo_adapter_built(const std::string& clients_dir) {
  ::setenv("LOCKCHECK_CLIENTS_DIR", clients_dir.c_str(), 1);
  return ::access((clients_dir + "/kazoo-lock.py").c_str(), R_OK) == 0 && find_program("python3").has_value();
}
inline const char* kNoKazoo = "the kazoo adapter is not built (scripts/build-clients; needs python3-kazoo)";

struct ZooKeeperTestCluster {
  // ttl_ms: the run's TTL the session timing follows (zookeeper_timing).
  explicit ZooKeeperTestCluster(int nodes = 5, bool proxy = true, int64_t ttl_ms = 1000) {
    LocalClusterSpec s;
    s.server = "zookeeper";
    s.nodes = nodes;
    s.proxy = proxy;
    s.ttl_ms = ttl_ms;
    cluster = start_local_cluster(s, dir.path());
  }
  ~ZooKeeperTestCluster() { cluster->stop(); }

  // Options for one client process (slot c0 unless told): every member through that slot's proxy links, as a
  // run gives them to a lock (an adapter builds its connect string from nodes).
  LockOptions options(std::chrono::milliseconds op_timeout = std::chrono::milliseconds(1000),
                      const std::string& slot = "c0") const {
    return slot_lock_options(*cluster, op_timeout, slot);
  }

  TempDir dir{"lockcheck-zookeeper"};
  std::unique_ptr<ServerCluster> cluster;
};

}  // namespace testing_util
}  // namespace lockcheck

// Skips (or fails under CI) when java or ZooKeeper is missing.
#define LOCKCHECK_NEED_ZOOKEEPER() \
  LOCKCHECK_NEED(::lockcheck::testing_util::zookeeper_installed(), ::lockcheck::testing_util::kNoZooKeeper)
