// What every ZooKeeper backend shares (the local one, cluster/zookeeper_cluster.h, and the Docker and SSH ones
// through the Remote seam's zookeeper kind, zookeeper_remote_kind in cluster/remote_cluster.h): a member's
// zoo.cfg and JVM command line, the tickTime rule, and the harness's own questions to the members (the
// four-letter word `srvr`, asked over a plain TCP connection: who leads, which version runs).
//
// A member is Debian's ZooKeeper 3.8 (package zookeeper / libzookeeper-java: /usr/share/java/zookeeper.jar)
// run as `java ... org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg`, logging through slf4j-simple to
// stderr. Its zoo.cfg names every member `server.K=host:quorum_port:election_port`, its own entry with host
// 0.0.0.0: it binds its two peer ports on every address, and the InitialMessage it sends on an election
// connection then names a wildcard address, which the receiving member ignores (QuorumCnxManager's
// InitialMessage.parse drops wildcards) and connects back to the address *its own* zoo.cfg gives for the sender.
// With a real address there instead, a member with the larger id would connect back to the address the smaller
// one reported, past whatever its own zoo.cfg says (the fault proxy, on the local backend). So every peer link
// goes to the address a member's own zoo.cfg gives for its peer, which is the peer's proxy link locally.
//
// Sessions: a ZooKeeper session's timeout is what the client asks, clamped to [minSessionTimeout,
// maxSessionTimeout], by default [2, 20] x tickTime. zookeeper_tick_ms() chooses tickTime from the run's TTL so
// that a session timeout of --ttl-ms is allowed; the range is written into zoo.cfg explicitly.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"

namespace lockcheck {

constexpr int kZooKeeperClientPort = 2181;  // ZooKeeper's default client port; quorum 2888, election 3888

// The peer ports of a member on the Docker and SSH backends (the Remote seam: cluster/zookeeper_remote.cc), from
// its client port: ZooKeeper's defaults at 2181 (quorum 2888, election 3888), and one up each for every further
// member on one host (ssh: client ports zookeeper_base_port + round). The local backend's members have their own
// ports behind proxy links instead (cluster/local_ensemble.h).
inline int zookeeper_quorum_port(int client_port) { return client_port + 707; }
inline int zookeeper_election_port(int client_port) { return client_port + 1707; }
constexpr const char* kZooKeeperJar = "/usr/share/java/zookeeper.jar";    // Debian's libzookeeper-java
constexpr const char* kSlf4jSimpleJar = "/usr/share/java/slf4j-simple.jar";  // Debian's libslf4j-java
constexpr const char* kZooKeeperMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

// The session timing of an ensemble: tickTime = min(max(ttl / 2, 100), 2000) ms (ZooKeeper's default tickTime
// is 2000), sessions allowed from 2 to 20 ticks (ZooKeeper's defaults in ticks, written out). initLimit and
// syncLimit (in ticks)
// keep at least 10 s and 2.5 s: five JVMs on two cores need that at start. So every TTL from 200 ms to 40 s is a
// session timeout the ensemble grants as asked (below 200 ms sessions last 200 ms).
struct ZooKeeperTiming {
  int tick_ms = 2000;
  int min_session_ms = 4000;
  int max_session_ms = 40000;
  int init_limit_ticks = 10;
  int sync_limit_ticks = 5;
};
ZooKeeperTiming zookeeper_timing(int64_t ttl_ms);
// "tickTime 500 ms, sessions 1000-10000 ms": for the log and the results.
std::string describe(const ZooKeeperTiming& t);

// One member's zoo.cfg.
struct ZooKeeperMemberConfig {
  int id = 1;                 // its myid (1-based)
  std::string data_dir;       // absolute; holds myid
  Endpoint client_listen;     // clientPortAddress:clientPort
  // Per member (index id - 1): the quorum and election addresses this member reaches it at. The member's own
  // entry is written with host 0.0.0.0 and its own ports (see the header comment).
  std::vector<Endpoint> quorum, election;
  ZooKeeperTiming timing;
};
std::string zookeeper_zoo_cfg(const ZooKeeperMemberConfig& c);

// The JVM command line of a member reading zoo_cfg. java: the program; classpath: jars joined with ':'.
// Small heaps (five JVMs on two cores): -Xms32m -Xmx128m, the serial GC, C1 only (faster start), no
// hsperfdata file in /tmp (a SIGKILLed JVM would leave it behind), IPv4 sockets only (the proxy's classifier
// reads /proc/net/tcp).
std::vector<std::string> zookeeper_member_argv(const std::string& java, const std::string& classpath,
                                               const std::string& zoo_cfg);
std::string zookeeper_default_classpath();  // kZooKeeperJar:kSlf4jSimpleJar

// Every jar a JVM with this classpath may open: the classpath's jars, then, transitively, the jars their
// manifests' Class-Path names that exist here (a jar named there but missing is skipped, as the JVM skips it:
// Debian's zookeeper.jar names jline.jar, which no package here installs). Paths as named (not resolved), breadth
// first, without duplicates. Measured: a member of the local backend opens exactly zookeeper.jar's Class-Path
// jars that exist, plus slf4j-simple.jar (/proc/PID/fd). Reads the manifests with python3's zipfile, one call a
// level (throws ClusterError naming python3 when it is missing; ClusterError when a classpath jar itself is not here).
std::vector<std::string> zookeeper_classpath_jars(const std::string& classpath);
// The jars of a ':'-separated classpath, in order (empty entries dropped).
std::vector<std::string> split_classpath(const std::string& classpath);
// Throws ClusterError naming the first jar of the classpath that cannot be read here (and Debian's package): the
// local backend's check before it starts members, and the image's before it is planned.
void check_zookeeper_classpath(const std::string& classpath);
// Pure: the Class-Path entries of a manifest's text (continuation lines joined), each made a path: an absolute
// entry as is, a relative one against jar_dir (Class-Path entries are URLs relative to the jar's folder).
std::vector<std::string> parse_manifest_class_path(const std::string& manifest, const std::string& jar_dir);

// What `srvr` says of one member; nullopt when it did not answer (down, paused, cut, or not serving).
struct ZooKeeperStatus {
  std::string version;  // "3.8.0" (of "Zookeeper version: 3.8.0-<commit>, built on ...")
  std::string mode;     // "leader", "follower", "standalone", "observer"
};
std::optional<ZooKeeperStatus> zookeeper_srvr(const Endpoint& member, std::chrono::milliseconds timeout);
// Pure: parses a `srvr` answer (nullopt when it names no Mode, e.g. "This ZooKeeper instance is not currently
// serving requests").
std::optional<ZooKeeperStatus> parse_zookeeper_srvr(const std::string& text);

// "" when every member answers `srvr` with a mode and exactly one says leader (one member alone: standalone);
// else what is missing.
std::string zookeeper_ready_error(const std::vector<Endpoint>& members, std::chrono::milliseconds timeout);

// The member (index into members; nullopt entries are down and not asked) that says it leads, when exactly one
// does; nullopt otherwise. A leader cut off from its followers keeps saying leader for up to syncLimit ticks.
std::optional<size_t> zookeeper_leader(const std::vector<std::optional<Endpoint>>& members,
                                       std::chrono::milliseconds timeout);

// The version a JVM with this classpath says it runs (org.apache.zookeeper.version.VersionInfoMain:
// "Apache ZooKeeper, version 3.8.0 ..."); "" when java or the jar is missing. Starts a JVM (about 1 s).
std::string zookeeper_jar_version(const std::string& java, const std::string& classpath);

// Why clock faults are refused on ZooKeeper members (ClusterError and ConfigError text; README "The ensemble").
std::string zookeeper_clock_refusal(const std::string& name);

}  // namespace lockcheck
