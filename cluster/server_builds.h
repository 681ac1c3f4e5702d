// Server versions (--server-version): which build of a server kind the nodes run. A build is a pair of programs,
// the server and the harness's own control client for it (etcd: etcd + etcdctl; Redis: redis-server alone), and
// its version is what the server program prints for `--version`, read when asked for, never assumed from a name.
//
// Where builds come from:
//   - the machine's: etcd and etcdctl on PATH (Debian's etcd-server and etcd-client), or --redis-server, or
//     Debian's zookeeper.jar run by java (ZooKeeper: server is the classpath, ctl is "");
//   - the project's: each folder servers_dir()/etcd-VERSION holding etcd and etcdctl (scripts/build-clients
//     builds etcd 3.4.3, the etcd seed's version, from the Go module proxy into build/servers/etcd-3.4.3/).
// The default ("" asked) is the machine's. Redis has only the machine's build (--redis-server chooses it).
#pragma once

#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/config.h"

namespace lockcheck {

struct ServerBuild {
  std::string version;  // as the server prints it (3.4.23, 7.0.15)
  std::string server;   // path (or PATH name) of the server program
  std::string ctl;      // etcd: the etcdctl that goes with it; "" for Redis
  std::string origin;   // "this machine (PATH)" or the folder it was found in
};

// $LOCKCHECK_SERVERS_DIR, else servers/ next to the lockcheck executable (build/servers/ for build/lockcheck).
std::string servers_dir();

// The version `program --version` prints ("" when it cannot run or prints none): etcd's "etcd Version: X",
// redis-server's "v=X". ZooKeeper: program is the classpath, and the version is what ZooKeeper's VersionInfoMain
// says on `java` (a JVM start, about 1 s).
std::string server_program_version(ServerKind kind, const std::string& program);

// Every build of kind found on this machine, the machine's first (when it has one).
std::vector<ServerBuild> server_builds(ServerKind kind, const RunConfig& c);

// The build c.server_version asks for ("" : the machine's). Throws ConfigError naming --server-version and the
// versions there are when it is not on this machine.
ServerBuild resolve_server_build(const RunConfig& c);

// The harness's etcdctl for c (""  for Redis): the resolved build's, or the machine's `etcdctl` when the nodes run
// a version not resolved here (--cluster ssh without --server-version: the hosts' own etcd).
std::string harness_etcdctl(const RunConfig& c);

// The version each node of a started cluster reports, asked of the node itself (index = node; "" where it did
// not answer): etcd members answer `etcdctl endpoint status` with their version, ZooKeeper members `srvr`'s
// "Zookeeper version:", Redis nodes INFO server's redis_version. Bounded (a few seconds); never throws.
std::vector<std::string> read_node_versions(const Cluster& cluster, const std::string& etcdctl);

// One line for results.json and the report: "3.4.3" when every node said the same, else each version with its
// nodes ("3.4.3 (n1, n2), not read (n3)").
std::string describe_node_versions(const Cluster& cluster, const std::vector<std::string>& versions);

}  // namespace lockcheck
