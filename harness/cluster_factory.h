#pragma once

#include <memory>
#include <string>

#include "core/cluster.h"
#include "core/config.h"

namespace lockcheck {

// The backend cfg.cluster names, for a run whose folder is run_dir. Throws ClusterError.
std::unique_ptr<Cluster> make_cluster(const RunConfig& cfg, const std::string& run_dir);

}  // namespace lockcheck
