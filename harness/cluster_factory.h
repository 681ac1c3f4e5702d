#pragma once

#include <memory>
#include <string>

#include "cluster/server_cluster.h"
#include "harness/plan.h"

namespace lockcheck {

// The cluster of a resolved plan: its server kind on the backend plan.config.cluster names, for a run whose
// folder is run_dir. Throws ClusterError (ConfigError for a bad hosts file).
std::unique_ptr<ServerCluster> make_cluster(const Plan& plan, const std::string& run_dir);

}  // namespace lockcheck
