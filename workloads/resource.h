// The resource a lock protects, for the set and counter workloads: a separate redis-server ("resource1",
// log in the run's nodes/), not one of the lock nodes and never faulted. Its damage is what the lost-updates
// checker measures.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cluster/local_cluster.h"
#include "core/config.h"
#include "sys/redis_conn.h"
#include "workloads/workload.h"

namespace lockcheck {

class ResourceServer {
 public:
  // Starts the server. Throws ClusterError.
  ResourceServer(const WorkloadOptions& options, const std::string& run_dir);
  ~ResourceServer();  // stops it
  Endpoint endpoint() const;
  // A new connection with the run's per-request timeout.
  std::unique_ptr<RedisConn> connect() const;

 private:
  const WorkloadOptions cfg_;
  LocalCluster server_;
};

// A set stored as one value: comma-separated decimal integers. "" is the empty set.
std::vector<int64_t> parse_set(const std::string& s);
std::string format_set(const std::vector<int64_t>& elements);

}  // namespace lockcheck
