// The resource a lock protects, for the set and counter workloads: a separate store speaking RESP (the first
// server kind that serves "resp", one node, started on loopback beside the run in <run dir>/resource/), never
// faulted: the damage the lost-updates checker measures must be the lock's, not the resource's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
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
  // The version the store reports ("" when it did not answer).
  std::string version() const;

 private:
  const WorkloadOptions cfg_;
  std::unique_ptr<Cluster> server_;
  std::string version_;
};

// A set stored as one value: comma-separated decimal integers. "" is the empty set.
std::vector<int64_t> parse_set(const std::string& s);
std::string format_set(const std::vector<int64_t>& elements);

}  // namespace lockcheck
