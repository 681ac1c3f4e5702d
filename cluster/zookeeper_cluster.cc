#include "cluster/zookeeper_cluster.h"

#include <boost/filesystem.hpp>

#include "cluster/server_builds.h"
#include "core/run_files.h"
#include "sys/process.h"

namespace fs = boost::filesystem;

namespace lockcheck {

ZooKeeperClusterOptions ZooKeeperClusterOptions::from(const RunConfig& c, const std::string& run_dir) {
  ZooKeeperClusterOptions o;
  o.nodes = c.nodes;
  o.nodes_dir = run_dir + "/nodes";
  o.seed = c.seed;
  o.timing = zookeeper_timing(c.ttl_ms);
  return o;
}


ZooKeeperCluster::ZooKeeperCluster(ZooKeeperClusterOptions opts)
    : LocalEnsemble(opts, "ZooKeeper", {"quorum", "election"}), zk_(std::move(opts)) {}

void ZooKeeperCluster::check_programs() const {
  if (!find_program(zk_.java)) {
    throw ClusterError("java not found: '" + zk_.java +
                       "' (--server zookeeper runs Debian's zookeeper on a JVM: apt-get install zookeeper "
                       "default-jdk-headless)");
  }
  check_zookeeper_classpath(zk_.classpath);
}

void ZooKeeperCluster::write_member_files(size_t n) {
  ZooKeeperMemberConfig c;
  c.id = static_cast<int>(n) + 1;
  c.data_dir = data_dirs_[n] + "/data";
  c.client_listen = nodes_[n].listen;
  for (size_t m = 0; m < nodes_.size(); ++m) {
    // The member's own entry: its real ports (written as 0.0.0.0); its peers: their shared proxy links.
    c.quorum.push_back(m == n ? peer_listen_[m][0] : peer_advertise_[m][0]);
    c.election.push_back(m == n ? peer_listen_[m][1] : peer_advertise_[m][1]);
  }
  c.timing = zk_.timing;
  boost::system::error_code ec;
  fs::create_directories(c.data_dir, ec);
  if (ec) throw ClusterError("cannot create " + c.data_dir + ": " + ec.message());
  try {
    write_file_atomically(c.data_dir + "/myid", std::to_string(c.id) + "\n");
    write_file_atomically(zoo_cfg_path(n), zookeeper_zoo_cfg(c));
  } catch (const std::exception& e) {
    throw ClusterError(std::string("cannot write ZooKeeper member ") + nodes_[n].name + "'s files: " + e.what());
  }
}

std::vector<std::string> ZooKeeperCluster::member_argv(size_t n) const {
  return zookeeper_member_argv(zk_.java, zk_.classpath, zoo_cfg_path(n));
}

std::string ZooKeeperCluster::ready_error() {
  std::vector<Endpoint> all;
  for (const auto& n : nodes_) all.push_back(n.listen);
  return zookeeper_ready_error(all, zk_.query_timeout);
}

std::optional<size_t> ZooKeeperCluster::leader() const {
  std::vector<std::optional<Endpoint>> up;
  for (size_t n = 0; n < nodes_.size(); ++n) {
    up.push_back(is_running(n) ? std::optional<Endpoint>(nodes_[n].listen) : std::nullopt);
  }
  return zookeeper_leader(up, zk_.query_timeout);
}

std::string ZooKeeperCluster::clock_refusal(size_t n) const { return zookeeper_clock_refusal(nodes_[n].name); }

}  // namespace lockcheck
