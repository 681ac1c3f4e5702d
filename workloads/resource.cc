#include "workloads/resource.h"

#include <sstream>

#include "cluster/server_cluster.h"
#include "servers/registry.h"

namespace lockcheck {

ResourceServer::ResourceServer(const WorkloadOptions& cfg, const std::string& run_dir) : cfg_(cfg) {
  const ServerSpec* spec = server_serving("resp");
  if (!spec) throw ClusterError("no server kind serves RESP, the resource store's protocol");
  ServerSetup setup;
  setup.options = resolve_server_options(*spec, nlohmann::json::object());
  const std::vector<ServerBuild> builds = spec->builds(setup.options);
  if (builds.empty()) throw ClusterError("no build of the resource store (" + spec->name() + "): " + spec->install_hint());
  setup.build = builds.front();
  setup.nodes = 1;
  setup.ttl_ms = cfg.ttl_ms;
  ClusterSetup c;
  c.run_dir = run_dir + "/resource";
  c.concurrency = 0;
  c.network_faults = false;  // never faulted: the damage measured must be the lock's, not the resource's
  c.clock_shim = false;
  auto server = std::make_unique<LoopbackCluster>(make_server_run(*spec, setup), c);
  server->start();
  const auto versions = server->node_versions();
  version_ = spec->name() + " " + (versions.empty() || versions[0].empty() ? builds.front().version : versions[0]);
  server_ = std::move(server);
}

ResourceServer::~ResourceServer() { server_->stop(); }

std::string ResourceServer::version() const { return version_; }

Endpoint ResourceServer::endpoint() const { return server_->nodes()[0].endpoint; }

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
