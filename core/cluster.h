// The nodes under test, behind one interface: a server kind (servers/: Redis, etcd, ZooKeeper, each one spec)
// run by the one cluster implementation (cluster/server_cluster.h) on a backend: `local` (processes on
// loopback), `docker` (containers, docker/docker_cluster.h) or `ssh` (remote hosts, cluster/ssh_cluster.h).
// Node numbers are 0-based; node names are "n1", "n2", ...
//
// Beyond starting and stopping, what a cluster can do is a set of abilities (Jepsen's optional db protocols
// Kill, Pause, Primary, ...): each nemesis declares the abilities it needs (nemesis/nemesis.h), each server kind
// and backend says which it has and why not the others, and a run's plan checks them once, before anything
// starts (harness/plan.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockcheck {

struct Endpoint {
  std::string host;
  int port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
  bool operator==(const Endpoint& o) const { return host == o.host && port == o.port; }
  bool operator!=(const Endpoint& o) const { return !(*this == o); }
};

// A member's part: a data node (kMaster: every member of a server without replicas; kReplica), or a member
// beside the data nodes that watches them (kSentinel: Redis' Sentinels).
enum class NodeRole { kMaster, kReplica, kSentinel };

// A cluster could not be started or a primitive could not be applied (exit status 3).
class ClusterError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct NodeInfo {
  std::string name;  // "n1"
  NodeRole role = NodeRole::kMaster;
  // The node's address in the cluster: what its peers, Sentinel and Redis Cluster redirections name it by.
  // Where node-to-node links go through the fault proxy (local backend, replicated and cluster topologies) it
  // is the node's shared proxy link, on which the harness's own connections are never faulted; otherwise it
  // is where the node itself listens.
  Endpoint endpoint;
  Endpoint listen;       // where the node's process itself listens; port 0: at endpoint
  std::string log_path;  // its log file (under the run's nodes/)
  const Endpoint& own_endpoint() const { return listen.port != 0 ? listen : endpoint; }
};

// Split as Jepsen splits a DB: the nodes' lifecycle (Cluster), faults of one node's process and clock
// (NodeFaults, Jepsen's Kill and Pause), and the network between parties (Network). A backend implements all
// three; a nemesis needs only the part it faults.

// What a power loss dropped on one node (NodeFaults::power_loss), measured from the node's power journal
// (cluster/power_loss.h). Paths are relative to the node's folder where the backend knows it.
struct PowerLossFile {
  std::string path;
  int64_t size = 0;      // bytes before the power loss
  int64_t kept = 0;      // bytes after it (0 when removed)
  bool removed = false;  // created since its directory's last fsync: the file itself is gone
};
struct PowerLossReport {
  std::vector<PowerLossFile> files;  // only files that lost something
  int64_t bytes = 0;                 // sum of size - kept
  int64_t records = 0;               // journal lines replayed
  // What a real power loss would also have undone and the model leaves as it is (a rename or unlink whose
  // directory was not fsynced afterwards), and files it could no longer find: said, never silently skipped.
  std::vector<std::string> not_undone;
};

// Faults of one node. REQUIRES: n < nodes().size() (asserted). Throw ClusterError when the backend cannot do it.
class NodeFaults {
 public:
  virtual ~NodeFaults() = default;
  virtual void kill(size_t n) = 0;     // SIGKILL; the node stays down until restart
  virtual void restart(size_t n) = 0;  // start again on the same address and data dir; waits for PING
  virtual void pause(size_t n) = 0;    // SIGSTOP (or the cgroup freezer)
  virtual void resume(size_t n) = 0;   // SIGCONT
  // Offsets the node's wall clock (CLOCK_REALTIME) by offset; 0 resets it. Effective at once.
  virtual void set_clock_offset(size_t n, std::chrono::nanoseconds offset) = 0;
  // Makes the node's wall clock run at 1 + rate_ppb / 10^9 of the real rate from now on, without a jump (the
  // shift it has now is kept); 0 puts it back on the real rate (the shift stays: set_clock_offset(n, 0) resets
  // it). Effective at once. The default: the backend cannot.
  virtual void set_clock_rate(size_t n, int64_t rate_ppb) {
    (void)n;
    (void)rate_ppb;
    throw ClusterError("this backend cannot change the rate of a node's clock");
  }
  // The shift of the node's wall clock from the real one now, as its clock setting says (what the node reads
  // from the shim); nullopt when the backend cannot tell.
  virtual std::optional<std::chrono::nanoseconds> clock_shift(size_t n) const {
    (void)n;
    return std::nullopt;
  }
  virtual bool is_running(size_t n) const = 0;  // started and not killed
  // SIGKILL, then drops every write the node had not made durable with fsync/fdatasync (the power shim's journal,
  // cluster/power_loss.h); the node stays down until restart. Backends without the power shim refuse.
  virtual PowerLossReport power_loss(size_t n) {
    (void)n;
    throw ClusterError("power loss is not supported by this backend");
  }
};

// Runs f(item) for every item, catching ClusterError; throws the first one after every item was tried (a fault
// over many links tries them all).
template <typename Items, typename F>
void each_link(const Items& items, F&& f) {
  std::string first_error;
  for (const auto& item : items) {
    try {
      f(item);
    } catch (const ClusterError& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  if (!first_error.empty()) throw ClusterError(first_error);
}

// The network. A party is a node name ("n1"), a Sentinel ("s1") or a client slot ("c0", "c1", ...; core/party.h:
// client process p uses slot "c" + p % concurrency, so a retired process's replacement sees the same network).
// Links are symmetric. Throw ClusterError for an unknown party or a link the backend cannot fault.
using LinkPairs = std::vector<std::pair<std::string, std::string>>;  // links {a, b}, each unordered
// The latency of one link {a, b} (0 and 0: none), as Network::set_delay takes it.
struct LinkDelay {
  std::string a, b;
  std::chrono::milliseconds delay{0}, jitter{0};
};

class Network {
 public:
  virtual ~Network() = default;
  // Where party reaches node n (a client slot's view; the fault proxy's port in the local backend).
  virtual Endpoint endpoint_for(const std::string& party, size_t n) const = 0;
  // Cuts the link a<->b: bytes are held, not answered or refused (like an iptables DROP). Idempotent.
  virtual void cut(const std::string& a, const std::string& b) = 0;
  // Heals one link / every link (held bytes flow again), and removes every delay.
  virtual void heal(const std::string& a, const std::string& b) = 0;
  virtual void heal_all() = 0;
  // cut / heal of many links as one fault: a backend that can apply them together overrides these (the fault
  // proxy is waited for once, so a loaded proxy thread costs one bounded wait per fault, not one per link).
  // Every pair is tried; the first error is thrown after the others were tried.
  virtual void cut_links(const LinkPairs& pairs) {
    each_link(pairs, [this](const auto& p) { cut(p.first, p.second); });
  }
  virtual void heal_links(const LinkPairs& pairs) {
    each_link(pairs, [this](const auto& p) { heal(p.first, p.second); });
  }
  // set_delay of many links as one fault, likewise.
  virtual void set_delays(const std::vector<LinkDelay>& delays) {
    each_link(delays, [this](const LinkDelay& d) { set_delay(d.a, d.b, d.delay, d.jitter); });
  }
  // Adds latency (+ uniform jitter in [0, jitter]) to each chunk on a<->b, order preserved; 0 removes it.
  virtual void set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                         std::chrono::milliseconds jitter) = 0;

};

// What a cluster can do beyond starting and stopping. Each server kind has some of these (servers/), each
// backend others (the network between servers), and a cluster has what both have.
enum class Ability {
  kKill,        // kill / restart (a killed member comes back on restart)
  kPause,       // pause / resume
  kClockStep,   // set_clock_offset: a step of a node's wall clock that the server reads
  kClockRate,   // set_clock_rate: a node's wall clock runs fast or slow
  kPowerLoss,   // power_loss: a kill that also drops what the node had not fsynced
  kCutPeers,    // cut / heal between two servers (node <-> node, node <-> Sentinel)
  kDelayPeers,  // set_delay between two servers
  kLeader,      // leader(): the servers elect one of themselves
  kPrimary,     // primary(): each key has a primary node that a replica takes over from (a failover)
  kKeyHolders,  // key_holders(): which nodes hold a given key (to aim a fault at a lock's nodes)
};
constexpr Ability kAllAbilities[] = {Ability::kKill,      Ability::kPause,      Ability::kClockStep,
                                     Ability::kClockRate, Ability::kPowerLoss,  Ability::kCutPeers,
                                     Ability::kDelayPeers, Ability::kLeader,    Ability::kPrimary,
                                     Ability::kKeyHolders};
// What the ability lets a nemesis do, in words: "step a node's clock", "cut the links between servers", ...
const char* describe(Ability a);
// Its short name, for schedules and lists: "kill", "clock-step", "cut-peers", ...
const char* to_string(Ability a);

// A set of abilities, each one it lacks with the reason (what says so: the server kind or the backend).
class Abilities {
 public:
  Abilities& grant(Ability a);
  // Takes a away (or keeps it away) and says why (the latest reason given).
  Abilities& refuse(Ability a, const std::string& why);
  bool has(Ability a) const;
  // Why a is missing ("" when it is there).
  std::string why_not(Ability a) const;
  // What both have: an ability is kept when both grant it; the reason of the first that refuses it.
  Abilities both(const Abilities& other) const;
  // What a plain set of processes has: every fault of a node's process, clock and links, but no leader,
  // primary or key holders (what a cluster that says nothing has).
  static Abilities basic();

 private:
  unsigned granted_ = 0;
  std::vector<std::pair<Ability, std::string>> refused_;
};

// Ability kPrimary: a server whose keys each live on one primary node, replicated asynchronously to replicas that
// take over when it fails (Redis with Sentinel, a Redis Cluster). What the failover nemesis asks; every call asks
// the nodes directly (bounded, short timeouts) and never throws.
class Primary {
 public:
  virtual ~Primary() = default;
  // The node the failover authority (the Sentinels' majority, the cluster's slot map) names primary of key now;
  // nullopt when it names none.
  virtual std::optional<size_t> elected_primary(const std::string& key) const = 0;
  // True when node n says it is a primary itself (an old primary may still say so after a failover).
  virtual bool says_primary(size_t n) const = 0;
  // True when node n is a replica whose replication link to node `primary` is up.
  virtual bool replicates_from(size_t n, size_t primary) const = 0;
  // True when different keys have different primaries (a Redis Cluster's slots); false when one primary holds
  // every key.
  virtual bool shards_by_key() const = 0;
  // Where key lives, for a fault's record ({"slot": 1234}; empty when the server does not shard).
  virtual nlohmann::json describe_key(const std::string& key) const = 0;
};

// Ability kKeyHolders: which nodes hold a key now, asked of each running node directly (a paused or cut node
// counts as not holding it). Bounded by about nodes x timeout per key; never throws.
class KeyHolders {
 public:
  virtual ~KeyHolders() = default;
  // The nodes that have any of keys, in order.
  virtual std::vector<size_t> nodes_holding_any(const std::vector<std::string>& keys,
                                                std::chrono::milliseconds timeout) const = 0;
};

// The nodes under test: lifecycle and what they are, with their node faults and their network.
class Cluster : public NodeFaults, public Network {
 public:
  ~Cluster() override = default;

  // Brings every node up and waits until each answers. Throws ClusterError.
  virtual void start() = 0;
  // Stops every node (SIGCONT first if paused, then SIGKILL/SIGTERM), undoing clock offsets. Idempotent,
  // never throws; safe to call from teardown paths.
  virtual void stop() noexcept = 0;

  // Data nodes (masters and replicas), in order n1, n2, ...
  virtual const std::vector<NodeInfo>& nodes() const = 0;
  // The members beside the data nodes that clients and faults may reach (Redis' Sentinels), s1, s2, ...; empty
  // for most servers.
  virtual std::vector<NodeInfo> sentinels() const { return {}; }
  // "redis on the local backend": what runs where, for messages.
  virtual std::string describe() const { return "a cluster"; }
  // What this cluster can do (its server kind's abilities on its backend).
  virtual Abilities abilities() const { return Abilities::basic(); }
  // The node that leads the cluster now, asked of the nodes (a bounded query), or nullopt when none is known or
  // the server has no leader of its own (ability kLeader). Never throws.
  virtual std::optional<size_t> leader() const { return std::nullopt; }
  // Ability kPrimary / kKeyHolders: the cluster's, or nullptr when it lacks it. Valid while the cluster lives.
  virtual const Primary* primary() const { return nullptr; }
  virtual const KeyHolders* key_holders() const { return nullptr; }

  NodeFaults& node_faults() { return *this; }
  Network& network() { return *this; }
  const Network& network() const { return *this; }
};

}  // namespace lockcheck
