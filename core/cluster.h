// The nodes under test, behind one interface with three backends: `local` (redis-server processes on
// loopback, cluster/local_cluster.h; or an etcd cluster, cluster/etcd_cluster.h, or a ZooKeeper ensemble,
// cluster/zookeeper_cluster.h), `docker` (containers,
// docker/docker_cluster.h) and `ssh` (remote hosts, cluster/ssh_cluster.h). Node numbers are 0-based; node
// names are "n1", "n2", ...
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lockcheck {

struct Endpoint {
  std::string host;
  int port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
  bool operator==(const Endpoint& o) const { return host == o.host && port == o.port; }
  bool operator!=(const Endpoint& o) const { return !(*this == o); }
};

// What the nodes run (--server): Redis (every backend and topology), etcd (a Raft cluster of etcd members:
// cluster/etcd_cluster.h on the local backend, the Remote seam's etcd kind on docker and ssh), or ZooKeeper (an
// ensemble: cluster/zookeeper_cluster.h, the Remote seam's zookeeper kind). What the harness does to a node
// itself (readiness, holder targeting, Sentinel failover) is Redis-only; every such place asks
// Cluster::server() and refuses the others.
enum class ServerKind { kRedis, kEtcd, kZooKeeper };
const char* to_string(ServerKind s);  // "redis", "etcd", "zookeeper"

enum class Persistence { kNone, kAofEverysec, kAofAlways };
const char* to_string(Persistence p);  // "none", "aof-everysec", "aof-always"

// kCluster: a Redis Cluster (cluster-enabled nodes; the first half masters with the hash slots split evenly,
// the rest their replicas; automatic failover by the cluster itself, no Sentinel).
enum class Topology { kIndependent, kReplicated, kCluster };
const char* to_string(Topology t);  // "independent", "replicated", "cluster"

enum class NodeRole { kMaster, kReplica, kSentinel };

// The name under which the Sentinels of the replicated topology monitor the master (every backend uses it;
// Sentinel-aware lock clients ask for it).
inline constexpr char kSentinelMasterName[] = "lockcheck";

// Redis Cluster's hash slots: a key's slot is CRC16 (XMODEM) of the key, or of its hash tag (the part between
// the first '{' and the next '}', when not empty), modulo kClusterSlots.
inline constexpr int kClusterSlots = 16384;
inline int cluster_key_slot(const std::string& key) {
  std::string::size_type begin = 0, end = key.size();
  const auto open = key.find('{');
  if (open != std::string::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string::npos && close > open + 1) begin = open + 1, end = close;
  }
  uint16_t crc = 0;
  for (auto i = begin; i < end; ++i) {
    crc ^= static_cast<uint16_t>(static_cast<unsigned char>(key[i]) << 8);
    for (int b = 0; b < 8; ++b)
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021) : static_cast<uint16_t>(crc << 1);
  }
  return crc % kClusterSlots;
}

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

 protected:
  template <typename Items, typename F>
  static void each_link(const Items& items, F&& f) {
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
};

// The nodes under test: lifecycle and what they are, with their node faults and their network.
class Cluster : public NodeFaults, public Network {
 public:
  ~Cluster() override = default;

  // Brings every node up and waits until each answers PING. Throws ClusterError.
  virtual void start() = 0;
  // Stops every node (SIGCONT first if paused, then SIGKILL/SIGTERM), undoing clock offsets. Idempotent,
  // never throws; safe to call from teardown paths.
  virtual void stop() noexcept = 0;

  // Data nodes (masters and replicas), in order n1, n2, ...
  virtual const std::vector<NodeInfo>& nodes() const = 0;
  // Sentinels of the replicated topology (empty otherwise).
  virtual std::vector<NodeInfo> sentinels() const { return {}; }
  // What the nodes run. Redis unless the backend says otherwise.
  virtual ServerKind server() const { return ServerKind::kRedis; }
  // The node that leads the cluster now, asked of the nodes (a bounded query), or nullopt when none is known or
  // the server has no leader of its own (Redis). Never throws.
  virtual std::optional<size_t> leader() const { return std::nullopt; }

  NodeFaults& node_faults() { return *this; }
  Network& network() { return *this; }
  const Network& network() const { return *this; }
};

}  // namespace lockcheck
