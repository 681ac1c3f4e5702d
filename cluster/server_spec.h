// A server kind (--server): what lock service the nodes run, as one spec, like Jepsen's db protocol with its
// optional abilities. Each kind is one file under servers/ (redis.cc, etcd.cc, zookeeper.cc) plus one line in
// servers/registry.cc; nothing else in the product names a kind. The one cluster implementation
// (cluster/server_cluster.h) runs any spec on any backend through the Remote seam (cluster/remote.h).
//
// Two parts:
//   ServerSpec  the kind itself, known before a run: its options (parsed by the spec, as a lock's are), the
//               protocols its clients speak, the versions it can run and how each is obtained, and the
//               abilities it has (what faults can reach it).
//   Server      one run's server, made by ServerSpec::make with the options and the build resolved: its members
//               and their ports, the files and command line of each member, when a member and the whole
//               cluster are ready, its leader, the version a node reports, and the ability objects (Primary,
//               KeyHolders: core/cluster.h) the nemesis asks.
//
// A member runs in the foreground; the cluster starts it in the background on its host (the Remote seam), with
// its output appended to its log, and kills, pauses, restarts it. The clock shim and the power shim are
// preloaded by the cluster when the spec grants the clock and power-loss abilities.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster.h"

namespace lockcheck {

// One option of a server kind (Redis' --topology): a row of the same shape as core/config.h's table, over a
// JSON value held in RunConfig::server_opts. The CLI makes a flag of each, the report a configuration row.
struct ServerOption {
  const char* key;    // in server_opts and config.json ("topology")
  const char* flag;   // the run flag without dashes ("topology"); unique over every server kind
  const char* help;   // the flag's help line
  const char* unit;   // "ms", "s" or ""
  nlohmann::json default_value;       // its type is the option's type (string, integer, boolean, number)
  std::vector<std::string> choices;   // a string option's allowed values; empty: any
  // The option's own range rule: "" when the value is fine, else what is wrong ("must be between 1 and 14").
  std::string (*check)(const nlohmann::json& value) = nullptr;
};

// Parses an option's flag text into its type (ConfigError naming `name` when it is not one: "--topology: 'x' is
// not one of independent, replicated, cluster").
nlohmann::json parse_server_option(const ServerOption& o, const std::string& text, const std::string& name);
// Checks a JSON value against the option (type, choices, range); ConfigError naming `name`.
void check_server_option(const ServerOption& o, const nlohmann::json& value, const std::string& name);

// One version of a server kind's programs and where it comes from.
struct ServerBuild {
  std::string version;  // as the server prints it (7.0.15, 3.4.23)
  // The programs of this build by the name the spec runs them by ("redis-server", "etcd"): a path or a PATH name.
  // What a host runs unless it has its own (the SSH hosts file's programs).
  std::map<std::string, std::string> programs;
  // The harness's own tools of this build, run on this machine (etcd's "etcdctl").
  std::map<std::string, std::string> tools;
  std::string origin;  // "this machine (PATH)" or the folder it was found in
};

// A port of a member: its label, where it listens when nothing else decides (a container of its own: the
// server's usual port), and whether the other members connect to it (peer traffic, which the network faults).
struct ServerPort {
  std::string label;  // "client" (always the first: what clients and the harness reach), "peer", "bus", ...
  int default_port = 0;
  bool peer = false;
};

// One member as the harness and the other members see it.
struct MemberAddress {
  std::string name;  // "n1", "s1"
  NodeRole role = NodeRole::kMaster;
  // By port label: where the other members reach that port (its host's address, or a proxy link on loopback).
  std::map<std::string, Endpoint> advertised;
  Endpoint admin;  // where the harness reaches its client port directly (never faulted)
  // advertised.at(label); ClusterError when the member has no such port.
  const Endpoint& at(const std::string& label) const;
};

// What the cluster tells a server kind about one member when it writes its files and starts it.
struct MemberContext {
  MemberAddress self;
  std::map<std::string, Endpoint> listen;  // by port label: where it binds (127.0.0.1 or 0.0.0.0, its port)
  std::string dir;                         // its folder on its host (absolute; exists)
  std::string log_path;                    // its log file on its host (absolute)
  // The address it must connect to its peers from ("" any): on loopback the fault proxy tells the members apart
  // by it (servers that can choose it: ServerSpec::binds_source_address).
  std::string source_address;
  std::vector<MemberAddress> members;  // every member of the run: the nodes n1.. first, then the Sentinels
  std::map<std::string, std::string> programs;  // the host's programs by name (absent: the name, on its PATH)
  // The program to run for `name` on its host.
  std::string program(const std::string& name) const;
  // Its index among the data nodes (n1 is 0), or among the Sentinels.
  size_t index() const;
};

// How to start a member, in the foreground (the cluster backgrounds it).
struct Launch {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};

// What an image of the docker backend needs for this server (docker/node_image.h): programs copied in (with
// the shared libraries they load), files copied at their own paths, a Java runtime.
struct ImageProgram {
  std::string name;          // the program's name in MemberContext::programs ("redis-server")
  std::string image_path;    // where it goes in the image (/usr/bin/redis-server)
  std::string host_program;  // the host's program copied there (a PATH name or a path)
  std::string link_to;       // not empty: a symlink to this path in the image instead of a copy
};
struct ImageNeeds {
  std::string repository;                // the image's name ("lockcheck-redis"); each kind its own
  std::vector<ImageProgram> programs;
  std::vector<std::string> files;        // host files copied at the same path (ZooKeeper's jars)
  std::string java;                      // "" none; else this host's `java` whose runtime goes in
  std::vector<std::pair<std::string, std::string>> texts;  // in-image path (under /etc/lockcheck/) -> content
};

// A per-host field of an older SSH hosts file that gives one of a kind's ports: the port `label` is the field's
// value plus offset ("etcd_base_port": client +0, peer +1).
struct LegacyHostPort {
  std::string field;
  std::string label;
  int offset = 0;
};

// $LOCKCHECK_SERVERS_DIR, else the project's server builds next to the lockcheck executable (build/servers/ for
// build/lockcheck): each kind's builds of the project's own, e.g. servers/etcd-3.4.3/.
std::string servers_dir();

// A run's setup of its server, from its configuration.
struct ServerSetup {
  nlohmann::json options = nlohmann::json::object();  // every option of the kind, defaults filled in
  ServerBuild build;
  int nodes = 5;
  int64_t ttl_ms = 1000;  // the lock's TTL (ZooKeeper sizes its sessions from it)
  uint64_t seed = 0;
  // Commands and faults cross `docker exec` or ssh (tens of milliseconds each): timings that assume a quick
  // harness (Sentinel's failover detection) are relaxed.
  bool remote_control = false;
};

// One run's server (see the header comment). Thread-safety: const methods may be called from any thread.
class Server {
 public:
  virtual ~Server() = default;

  // The data nodes' roles (n1, n2, ...), and how many Sentinels run beside them.
  virtual std::vector<NodeRole> node_roles(int nodes) const { return std::vector<NodeRole>(nodes, NodeRole::kMaster); }
  virtual int sentinels() const { return 0; }
  // The ports of a member of `role`, the client port first.
  virtual std::vector<ServerPort> ports(NodeRole role) const = 0;
  // Where members share an SSH host, member round r listens at each port's base + r * port_stride().
  virtual int port_stride() const { return 1; }

  // Files (relative to m.dir) written into a member's folder before its first start.
  virtual std::vector<std::pair<std::string, std::string>> files(const MemberContext& m) const {
    (void)m;
    return {};
  }
  // Its command line and environment.
  virtual Launch launch(const MemberContext& m) const = 0;
  // Paths (relative to m.dir) removed before every start: what a restarted member must not come back with.
  virtual std::vector<std::string> wipe_before_start(const MemberContext& m) const {
    (void)m;
    return {};
  }
  // Paths (relative to a member's folder) removed at stop where the folder stays (the local backend keeps it in
  // the run's results): data too large to keep.
  virtual std::vector<std::string> discard_at_stop() const { return {}; }

  // "" when member m answers at its admin endpoint; else what is wrong. Polled after every start and restart.
  virtual std::string ready_error(const MemberAddress& m) const = 0;
  // Once every member answers: waits for what the cluster needs before faults (a leader, replication links, a
  // formed Redis Cluster), at most timeout; stopping() ends it early. Throws ClusterError naming what it waited
  // for, with hint ("see the node logs under DIR") appended.
  // At the cluster's start, once every data node answers and before the other members (Sentinels) start: waits
  // for what those members must find when they first look (the replicas' links), at most timeout. Not at a
  // restart (a fault may keep a master down). members: the data nodes. Throws ClusterError as after_start.
  virtual void nodes_started(const std::vector<MemberAddress>& members, std::chrono::milliseconds timeout,
                             const std::string& hint, const std::function<bool()>& stopping) const {
    (void)members, (void)timeout, (void)hint, (void)stopping;
  }
  virtual void after_start(const std::vector<MemberAddress>& members, std::chrono::milliseconds timeout,
                           const std::string& hint, const std::function<bool()>& stopping) const {
    (void)members, (void)timeout, (void)hint, (void)stopping;
  }
  // How long a start may take, members and after_start together (five JVMs on two cores need more).
  virtual std::chrono::milliseconds start_timeout() const { return std::chrono::milliseconds(30000); }

  // The node that leads (ability kLeader), asked of the running nodes (nullopt entries are down); nullopt when
  // none does or it cannot tell. Never throws.
  virtual std::optional<size_t> leader(const std::vector<std::optional<MemberAddress>>& nodes) const {
    (void)nodes;
    return std::nullopt;
  }
  // The version each node reports, asked of it (index = node; "" where it did not answer). Bounded; never throws.
  virtual std::vector<std::string> node_versions(const std::vector<MemberAddress>& nodes) const = 0;
  // The wall clock member m reads now (ns since the epoch), asked of it; nullopt when it did not answer or the kind
  // cannot say. What shows that a clock fault reached the server. Bounded; never throws.
  virtual std::optional<int64_t> wall_clock_ns(const MemberAddress& m) const {
    (void)m;
    return std::nullopt;
  }
  // The ability objects over a running cluster (nullptr: the kind lacks it). The cluster outlives them.
  virtual std::unique_ptr<Primary> primary(const Cluster& cluster) const {
    (void)cluster;
    return nullptr;
  }
  virtual std::unique_ptr<KeyHolders> key_holders(const Cluster& cluster) const {
    (void)cluster;
    return nullptr;
  }
  // What the run's server was, for results.json beside its options (ZooKeeper's session timing), and a line for
  // the run log ("" none).
  virtual nlohmann::json settings() const { return nlohmann::json::object(); }
  virtual std::string describe_settings() const { return ""; }
  // What the docker backend's image needs.
  virtual ImageNeeds image() const = 0;
};

// A server kind (see the header comment). One object per kind, in servers/registry.cc.
class ServerSpec {
 public:
  virtual ~ServerSpec() = default;
  virtual std::string name() const = 0;         // --server NAME
  virtual std::string description() const = 0;  // one line for `lockcheck list`
  // Its options, in the order of its --help and report rows.
  virtual const std::vector<ServerOption>& options() const = 0;
  // Whether option `key` has any effect with these options (every option filled in): Redis' Sentinel settings
  // only where Sentinels run. The report shows only the options that do (harness/plan.h).
  virtual bool option_applies(const nlohmann::json& options, const std::string& key) const {
    (void)options, (void)key;
    return true;
  }
  // The rules between its options and the run's node count (each option alone: ServerOption::check): "" when
  // they hold, else the message, naming the flag.
  // backend: where it will run ("local", "docker", "ssh"), for what a kind has not been tried on.
  virtual std::string check_options(const nlohmann::json& options, int nodes, const std::string& backend) const {
    (void)options, (void)nodes, (void)backend;
    return "";
  }
  // The node count when --nodes was not given (Redis Cluster needs 6).
  virtual int default_nodes(const nlohmann::json& options) const {
    (void)options;
    return 5;
  }
  // The protocols its clients speak with these options: a lock names the one it speaks (LockAlgorithm::protocol).
  virtual std::vector<std::string> protocols(const nlohmann::json& options) const = 0;
  // Options (as given: a JSON object) with which this kind serves `protocol`; null when it cannot.
  // Default: the empty object when its default options serve it.
  virtual nlohmann::json options_serving(const std::string& protocol) const;
  // The builds on this machine, the default first. version: --server-version ("" the default).
  virtual std::vector<ServerBuild> builds(const nlohmann::json& options) const = 0;
  // What to install when there is no build ("Debian's etcd-server and etcd-client").
  virtual std::string install_hint() const = 0;
  // The abilities the kind has with these options, on any backend (the backend's network is the backend's).
  virtual Abilities abilities(const nlohmann::json& options) const = 0;
  // The fault proxy on loopback can tell its members apart by the source address they connect from (the kind
  // writes MemberContext::source_address into their config); otherwise it asks /proc who owns the socket.
  virtual bool binds_source_address() const { return false; }
  // The SSH hosts file's per-host fields of older versions that this kind reads (cluster/ssh_hosts.h): a field
  // naming a program (field -> program name), and fields giving a port (field -> port label and offset).
  virtual std::map<std::string, std::string> legacy_host_programs() const { return {}; }
  virtual std::vector<LegacyHostPort> legacy_host_ports() const { return {}; }
  // The ctest label of the tests that need this kind's programs ("redis").
  virtual std::string test_label() const = 0;
  // Whether its tests load the machine so much (five JVMs on two cores) that they run one at a time, apart from
  // other such tests (ctest RESOURCE_LOCK "ensemble").
  virtual bool heavy_tests() const { return false; }
  // One run's server. REQUIRES: setup.options checked (every option present).
  virtual std::unique_ptr<Server> make(const ServerSetup& setup) const = 0;
};

// A server kind made ready for one run: the spec's Server and what the cluster needs of the spec.
struct ServerRun {
  std::shared_ptr<const Server> server;
  std::string name;                    // the kind's name ("redis")
  Abilities abilities;                 // ServerSpec::abilities with the run's options
  bool binds_source_address = false;  // ServerSpec::binds_source_address
  ServerBuild build;                   // the run's build
  int nodes = 5;
};
// spec.make(setup) with the rest of ServerRun filled in from spec.
ServerRun make_server_run(const ServerSpec& spec, const ServerSetup& setup);

// Every option of spec, given ones from `given` (a JSON object; ConfigError naming the key for an unknown one or
// a bad value) and the others at their defaults.
nlohmann::json resolve_server_options(const ServerSpec& spec, const nlohmann::json& given);

}  // namespace lockcheck
