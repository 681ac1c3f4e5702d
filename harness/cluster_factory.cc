#include "harness/cluster_factory.h"

#include "cluster/server_cluster.h"
#include "cluster/ssh_cluster.h"
#include "docker/docker_cluster.h"

namespace lockcheck {

std::unique_ptr<ServerCluster> make_cluster(const Plan& plan, const std::string& run_dir) {
  const RunConfig& cfg = plan.config;
  ClusterSetup setup;
  setup.run_dir = run_dir;
  setup.concurrency = cfg.concurrency;
  setup.seed = cfg.seed;
  setup.power_shim = plan.power_shim;
  setup.ship_build = plan.ship_build;
  ServerRun server = plan_server_run(plan);
  if (cfg.cluster == "local") return std::make_unique<LoopbackCluster>(std::move(server), setup);
  if (cfg.cluster == "docker") return std::make_unique<DockerCluster>(std::move(server), setup);
  if (cfg.cluster == "ssh") {
    return std::make_unique<SshCluster>(std::move(server), setup, load_ssh_hosts(cfg.hosts, ssh_hosts_schema()));
  }
  throw ClusterError("cluster backend '" + cfg.cluster + "' is not available in this build");
}

}  // namespace lockcheck
