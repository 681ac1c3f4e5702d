// A RemoteCluster (cluster/remote_cluster.h) whose one host is this machine's loopback, reached through the
// Remote seam's local side (LocalRemote): the docker and ssh backends' code with real redis-server processes and
// without root, Docker or sshd (no iptables, no tc).
#pragma once

#include <unistd.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster/remote_cluster.h"

namespace lockcheck {

class LoopbackCluster final : public RemoteCluster {
 public:
  LoopbackCluster(const RunConfig& config, const std::string& run_dir, const std::string& work_dir,
                  const std::string& redis_server, const std::vector<int>& ports,
                  const std::map<std::string, std::string>& programs = {})
      : RemoteCluster("loopback cluster", config, run_dir, {}, "t" + std::to_string(::getpid()), "LC-test") {
    RemoteHost host;
    host.remote = std::make_shared<LocalRemote>("loopback");
    host.name = "lo";
    host.address = "127.0.0.1";
    host.work_dir = work_dir;
    host.programs = programs;  // e.g. {"java", PATH} (--server zookeeper: "java" on PATH when not named)
    host.programs["redis-server"] = redis_server;
    host.can_filter = false;  // no root here: no iptables
    host.can_delay = false;
    std::vector<Placement> nodes;
    for (int port : ports) nodes.push_back({0, port});
    place({host}, nodes, {});
  }
  ~LoopbackCluster() override { stop(); }
};

}  // namespace lockcheck
