#include "workloads/resource.h"

#include <sstream>

namespace lockcheck {

namespace {

LocalClusterOptions resource_options(const WorkloadOptions& cfg, const std::string& run_dir) {
  LocalClusterOptions o;
  o.nodes = 1;
  o.persistence = Persistence::kNone;
  o.redis_server = cfg.redis_server;
  o.nodes_dir = run_dir + "/nodes";
  o.name_prefix = "resource";
  o.use_proxy = false;  // never faulted: the damage measured must be the lock's, not the resource's
  o.use_clock_shim = false;
  return o;
}

}  // namespace

ResourceServer::ResourceServer(const WorkloadOptions& cfg, const std::string& run_dir)
    : cfg_(cfg), server_(resource_options(cfg, run_dir)) {
  server_.start();
}

ResourceServer::~ResourceServer() { server_.stop(); }

Endpoint ResourceServer::endpoint() const { return server_.nodes()[0].endpoint; }

std::unique_ptr<RedisConn> ResourceServer::connect() const {
  return std::make_unique<RedisConn>(endpoint(), std::chrono::milliseconds(std::min<int64_t>(cfg_.op_timeout_ms, 1000)),
                                     std::chrono::milliseconds(cfg_.op_timeout_ms));
}

std::vector<int64_t> parse_set(const std::string& s) {
  std::vector<int64_t> out;
  std::istringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(std::stoll(item));
  }
  return out;
}

std::string format_set(const std::vector<int64_t>& elements) {
  std::string s;
  for (size_t i = 0; i < elements.size(); ++i) {
    if (i) s.push_back(',');
    s += std::to_string(elements[i]);
  }
  return s;
}

}  // namespace lockcheck
