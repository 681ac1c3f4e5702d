#include "harness/cluster_factory.h"

#include "cluster/etcd_cluster.h"
#include "cluster/local_cluster.h"
#include "cluster/ssh_cluster.h"
#include "cluster/zookeeper_cluster.h"
#include "docker/docker_cluster.h"

namespace lockcheck {

std::unique_ptr<Cluster> make_cluster(const RunConfig& cfg, const std::string& run_dir) {
  // etcd on docker and ssh: the same backends, with the Remote seam's etcd kind (cluster/remote_cluster.h).
  if (cfg.server == ServerKind::kEtcd && cfg.cluster == "local") {
    return std::make_unique<EtcdCluster>(EtcdClusterOptions::from(cfg, run_dir));
  }
  if (cfg.server == ServerKind::kZooKeeper && cfg.cluster == "local") {
    return std::make_unique<ZooKeeperCluster>(ZooKeeperClusterOptions::from(cfg, run_dir));
  }
  if (cfg.cluster == "local") return std::make_unique<LocalCluster>(LocalClusterOptions::from(cfg, run_dir));
  if (cfg.cluster == "docker") return std::make_unique<DockerCluster>(cfg, run_dir);
  if (cfg.cluster == "ssh") return std::make_unique<SshCluster>(cfg, run_dir);
  throw ClusterError("cluster backend '" + cfg.cluster + "' is not available in this build");
}

}  // namespace lockcheck
