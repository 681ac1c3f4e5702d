// A started etcd cluster (servers/etcd.cc on the local backend) in its own temporary folder, for the tests labelled `etcd`.
// Without etcd (Debian etcd-server) or etcdctl (etcd-client) the test skips with the reason, except under CI,
// where that is a failure. The destructor stops every member and removes the folder: nothing is left behind.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "locks/adapters.h"
#include "locks/lock_client.h"
#include "sys/process.h"
#include "tests/support/ci.h"
#include "tests/support/cluster_waits.h"
#include "tests/support/local_cluster.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace testing_util {

inline bool etcd_installed() { return find_program("etcd").has_value() && find_program("etcdctl").has_value(); }
inline const char* kNoEtcd = "etcd and etcdctl are not installed (apt-get install etcd-server etcd-client)";

// True when the etcd adapter (clients/etcd, built by scripts/build-clients) is in clients_dir (which becomes
// LOCKCHECK_CLIENTS_DIR for the runs of this process).
inline bool etcd_adapter_built(const std::string& clients_dir) {
  ::setenv("LOCKCHECK_CLIENTS_DIR", clients_dir.c_str(), 1);
  return std::ifstream(adapter_program(*find_lock_adapter("etcd"))).good();
}

// True when scripts/build-clients built etcd 3.4.3 (the version Jepsen's etcd analysis tested) into build_dir/servers/etcd-3.4.3/;
// build_dir/servers becomes LOCKCHECK_SERVERS_DIR (and build_dir/clients LOCKCHECK_CLIENTS_DIR) for this process.
inline bool etcd343_built(const std::string& build_dir) {
  ::setenv("LOCKCHECK_SERVERS_DIR", (build_dir + "/servers").c_str(), 1);
  ::setenv("LOCKCHECK_CLIENTS_DIR", (build_dir + "/clients").c_str(), 1);
  return std::ifstream(build_dir + "/servers/etcd-3.4.3/etcd").good() &&
         std::ifstream(build_dir + "/servers/etcd-3.4.3/etcdctl").good();
}

struct EtcdTestCluster {
  // version: the build (default the machine's; tests of --server-version give another).
  explicit EtcdTestCluster(int nodes = 5, bool proxy = true, const std::string& version = "") {
    LocalClusterSpec s;
    s.server = "etcd";
    s.nodes = nodes;
    s.proxy = proxy;
    s.version = version;
    cluster = start_local_cluster(s, dir.path());
  }
  ~EtcdTestCluster() { cluster->stop(); }

  // Options for one client process (slot c0 unless told): every member through that slot's proxy links.
  LockOptions options(std::chrono::milliseconds op_timeout = std::chrono::milliseconds(1000),
                      const std::string& slot = "c0") const {
    return slot_lock_options(*cluster, op_timeout, slot);
  }

  // Options for the etcd adapter (locks/adapters.h) with lock options opts, run by slot's process. The op timeout
  // is 5 s: an acquire is a few raft commits, each a WAL fsync, and with the suite's ZooKeeper JVMs, containers and
  // builds beside it on 2 cores one acquire took more than 2 s (CI, 2026-12-06).
  LockOptions adapter_options(const nlohmann::json& opts, const std::string& slot = "c0", bool fencing = false,
                              int client_timeout_ms = 15000) const {
    LockOptions o = options(std::chrono::milliseconds(5000), slot);
    o.extra["client_cmd"] = join_command_line(adapter_argv(*find_lock_adapter("etcd"), opts));
    o.extra["client_startup_ms"] = 10000;
    o.extra["client_timeout_ms"] = client_timeout_ms;
    o.fencing = fencing;
    return o;
  }

  TempDir dir{"lockcheck-etcd"};
  std::unique_ptr<ServerCluster> cluster;
};

}  // namespace testing_util
}  // namespace lockcheck

// Skips (or fails under CI) when etcd is missing.
#define LOCKCHECK_NEED_ETCD() LOCKCHECK_NEED(::lockcheck::testing_util::etcd_installed(), ::lockcheck::testing_util::kNoEtcd)
