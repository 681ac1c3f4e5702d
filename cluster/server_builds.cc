#include "cluster/server_builds.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include <map>

#include <nlohmann/json.hpp>

#include "cluster/etcd_common.h"
#include "cluster/zookeeper_common.h"
#include "sys/process.h"
#include "sys/redis_conn.h"

namespace lockcheck {

std::string servers_dir() {
  if (const char* env = std::getenv("LOCKCHECK_SERVERS_DIR"); env && *env) return env;
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "build/servers";
  return (exe.parent_path() / "servers").string();
}

std::string server_program_version(ServerKind kind, const std::string& program) {
  if (kind == ServerKind::kZooKeeper) return zookeeper_jar_version("java", program);
  if (!find_program(program)) return "";
  CommandResult r;
  try {
    r = run_command({program, "--version"}, std::chrono::seconds(10));
  } catch (const std::exception&) {
    return "";
  }
  const std::string marker = kind == ServerKind::kEtcd ? "etcd Version: " : "v=";
  const auto pos = r.out.find(marker);
  if (pos == std::string::npos) return "";
  const auto start = pos + marker.size();
  const auto end = r.out.find_first_of(" \t\r\n", start);
  return r.out.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::vector<ServerBuild> server_builds(ServerKind kind, const RunConfig& c) {
  std::vector<ServerBuild> builds;
  if (kind == ServerKind::kRedis) {
    const std::string v = server_program_version(kind, c.redis_server);
    if (!v.empty()) builds.push_back({v, c.redis_server, "", "this machine (--redis-server " + c.redis_server + ")"});
    return builds;
  }
  if (kind == ServerKind::kZooKeeper) {
    const std::string classpath = zookeeper_default_classpath();
    const std::string v = server_program_version(kind, classpath);
    if (!v.empty()) builds.push_back({v, classpath, "", "this machine (Debian zookeeper, java on PATH)"});
    return builds;
  }
  if (const std::string v = server_program_version(kind, "etcd"); !v.empty() && find_program("etcdctl")) {
    builds.push_back({v, "etcd", "etcdctl", "this machine (PATH)"});
  }
  std::error_code ec;
  std::vector<std::filesystem::path> dirs;
  for (const auto& e : std::filesystem::directory_iterator(servers_dir(), ec)) {
    if (e.path().filename().string().rfind("etcd-", 0) == 0) dirs.push_back(e.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const auto& d : dirs) {
    const std::string server = (d / "etcd").string(), ctl = (d / "etcdctl").string();
    if (::access(server.c_str(), X_OK) != 0 || ::access(ctl.c_str(), X_OK) != 0) continue;
    const std::string v = server_program_version(kind, server);
    if (v.empty()) continue;
    builds.push_back({v, server, ctl, d.string()});
  }
  return builds;
}

ServerBuild resolve_server_build(const RunConfig& c) {
  const auto builds = server_builds(c.server, c);
  std::string there;
  for (const auto& b : builds) {
    if (c.server_version.empty() || b.version == c.server_version) return b;
    there += (there.empty() ? "" : ", ") + b.version + " (" + b.origin + ")";
  }
  const std::string kind = to_string(c.server);
  if (c.server_version.empty()) {
    throw ConfigError("--server " + kind + ": no " + kind + " build on this machine (" +
                      (c.server == ServerKind::kEtcd
                           ? "install Debian's etcd-server and etcd-client, or run scripts/build-clients for 3.4.3"
                       : c.server == ServerKind::kZooKeeper
                           ? "install Debian's zookeeper and default-jdk-headless: " + std::string(kZooKeeperJar) +
                                 " run by java"
                           : "--redis-server " + c.redis_server + " does not run") +
                      ")");
  }
  throw ConfigError("--server-version " + c.server_version + ": no " + kind + " " + c.server_version +
                    " on this machine (there: " + (there.empty() ? std::string("none") : there) +
                    (c.server == ServerKind::kEtcd        ? "; scripts/build-clients builds etcd 3.4.3 into " + servers_dir()
                     : c.server == ServerKind::kZooKeeper ? std::string("; only Debian's zookeeper is run")
                                                          : std::string("; --redis-server chooses the Redis build")) +
                    ")");
}

std::string harness_etcdctl(const RunConfig& c) {
  if (c.server != ServerKind::kEtcd) return "";
  if (c.cluster == "ssh" && c.server_version.empty()) return "etcdctl";
  return resolve_server_build(c).ctl;
}

std::vector<std::string> read_node_versions(const Cluster& cluster, const std::string& etcdctl) {
  const auto& nodes = cluster.nodes();
  std::vector<std::string> versions(nodes.size());
  if (cluster.server() == ServerKind::kEtcd) {
    std::vector<Endpoint> eps;
    for (const auto& n : nodes) eps.push_back(n.endpoint);
    const auto status = nlohmann::json::parse(
        etcdctl_endpoint_json(etcdctl, eps, "status", std::chrono::milliseconds(2000), nullptr), nullptr, false);
    if (!status.is_array()) return versions;
    for (size_t i = 0; i < eps.size(); ++i) {
      for (const auto& s : status) {
        if (s.value("Endpoint", "") != eps[i].str()) continue;
        const auto* st = s.contains("Status") ? &s["Status"] : nullptr;
        if (st && st->contains("version") && (*st)["version"].is_string()) versions[i] = (*st)["version"];
      }
    }
    return versions;
  }
  if (cluster.server() == ServerKind::kZooKeeper) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      const auto s = zookeeper_srvr(nodes[i].endpoint, std::chrono::milliseconds(1000));
      if (s) versions[i] = s->version;
    }
    return versions;
  }
  ignore_sigpipe();
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::optional<std::string> text;
    try {
      RedisConn conn(nodes[i].endpoint, std::chrono::milliseconds(500), std::chrono::milliseconds(1000));
      const Reply r = conn.command({"INFO", "server"});
      if (r.ok()) text = r.str();
    } catch (const std::exception&) {
      // a node that does not answer names no version
    }
    if (!text) continue;
    const auto pos = text->find("redis_version:");
    if (pos == std::string::npos) continue;
    const auto start = pos + 14;
    versions[i] = text->substr(start, text->find_first_of("\r\n", start) - start);
  }
  return versions;
}

std::string describe_node_versions(const Cluster& cluster, const std::vector<std::string>& versions) {
  std::map<std::string, std::string> nodes_of;  // version -> its nodes
  for (size_t i = 0; i < versions.size() && i < cluster.nodes().size(); ++i) {
    auto& list = nodes_of[versions[i].empty() ? "not read" : versions[i]];
    list += (list.empty() ? "" : ", ") + cluster.nodes()[i].name;
  }
  if (nodes_of.size() == 1 && nodes_of.begin()->first != "not read") return nodes_of.begin()->first;
  std::string line;
  for (const auto& [v, list] : nodes_of) line += (line.empty() ? "" : ", ") + v + " (" + list + ")";
  return line.empty() ? "not read" : line;
}

}  // namespace lockcheck
