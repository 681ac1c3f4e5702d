#include "core/config.h"

#include <fstream>

#include <cctype>
#include <set>

#include <filesystem>

#include "locks/adapters.h"
#include "cluster/ssh_hosts.h"
#include "locks/lock_client.h"
#include "nemesis/nemesis.h"
#include "workloads/workload.h"

namespace lockcheck {

const char* to_string(Persistence p) {
  switch (p) {
    case Persistence::kNone: return "none";
    case Persistence::kAofEverysec: return "aof-everysec";
    case Persistence::kAofAlways: return "aof-always";
  }
  return "none";
}

const char* to_string(Topology t) {
  switch (t) {
    case Topology::kIndependent: return "independent";
    case Topology::kReplicated: return "replicated";
    case Topology::kCluster: return "cluster";
  }
  return "independent";
}

namespace {

Persistence parse_persistence(const std::string& s) {
  if (s == "none") return Persistence::kNone;
  if (s == "aof-everysec") return Persistence::kAofEverysec;
  if (s == "aof-always") return Persistence::kAofAlways;
  throw ConfigError("--persistence: '" + s + "' is not one of none, aof-everysec, aof-always");
}

Topology parse_topology(const std::string& s) {
  if (s == "independent") return Topology::kIndependent;
  if (s == "replicated") return Topology::kReplicated;
  if (s == "cluster") return Topology::kCluster;
  throw ConfigError("--topology: '" + s + "' is not one of independent, replicated, cluster");
}

template <typename T>
void require(bool ok, const char* flag, const T& value, const char* what) {
  if (!ok) throw ConfigError(std::string(flag) + ": " + std::to_string(value) + " " + what);
}

// --lock-opt keys: an adapter's flags, or the LockOptions.extra keys a built-in algorithm reads.
void validate_lock_opts(const RunConfig& c) {
  if (!c.lock_opts.is_object()) throw ConfigError("--lock-opt: lock_opts must be a JSON object");
  if (const LockAdapter* a = find_lock_adapter(c.lock)) {
    try {
      adapter_argv(*a, c.lock_opts);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(std::string("--lock-opt: ") + e.what());
    }
    std::error_code ec;
    if (!std::filesystem::exists(adapter_program(*a), ec)) {
      throw ConfigError(std::string("--lock ") + a->name + ": the adapter is not built (" + adapter_program(*a) +
                        " is missing; run scripts/build-clients, which needs " + a->toolchain + ")");
    }
    return;
  }
  const LockAlgorithm* algo = find_lock_algorithm(c.lock);
  const std::string keys = algo ? algo->option_keys : "";
  for (auto it = c.lock_opts.begin(); it != c.lock_opts.end(); ++it) {
    bool known = false;
    size_t pos = 0;
    while (pos <= keys.size()) {
      size_t end = keys.find(',', pos);
      if (end == std::string::npos) end = keys.size();
      std::string k = keys.substr(pos, end - pos);
      k.erase(0, k.find_first_not_of(' '));
      if (k == it.key()) known = true;
      pos = end + 1;
    }
    if (!known) {
      throw ConfigError("--lock-opt: '" + it.key() + "' is not an option of " + c.lock + " (known: " +
                        (keys.empty() ? std::string("none") : keys) + ")");
    }
  }
}

}  // namespace

void resolve_lock(RunConfig& c) {
  const LockAdapter* a = find_lock_adapter(c.lock);
  if (!a) return;
  try {
    c.client_cmd = join_command_line(adapter_argv(*a, c.lock_opts));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("--lock-opt: ") + e.what());
  }
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(path + ": not valid JSON (" + e.what() + ")");
  }
}

nlohmann::json lock_extra(const RunConfig& c, const std::string& stderr_path) {
  nlohmann::json extra = {{"client_cmd", c.client_cmd}, {"wait_replicas", c.wait_replicas}};
  if (!find_lock_adapter(c.lock) && c.lock_opts.is_object()) {
    for (auto it = c.lock_opts.begin(); it != c.lock_opts.end(); ++it) extra[it.key()] = it.value();
  }
  if (!stderr_path.empty() && !extra.contains("client_stderr_path")) extra["client_stderr_path"] = stderr_path;
  return extra;
}

void validate(const RunConfig& c) {
  if (c.cluster != "local" && c.cluster != "docker" && c.cluster != "ssh") {
    throw ConfigError("--cluster: '" + c.cluster + "' is not one of local, docker, ssh");
  }
  if (c.cluster == "ssh") load_ssh_hosts(c.hosts);  // throws ConfigError naming the file and field
  if (c.cluster != "ssh" && !c.hosts.empty()) throw ConfigError("--hosts: only with --cluster ssh");
  require(c.nodes >= 1 && c.nodes <= 15, "--nodes", c.nodes, "must be between 1 and 15");
  if (c.topology == Topology::kReplicated && c.nodes < 2) {
    throw ConfigError("--nodes: the replicated topology needs a master and at least one replica");
  }
  if (c.topology == Topology::kCluster && c.nodes < 6) {
    throw ConfigError("--nodes: the cluster topology needs at least 6 nodes (3 masters, each with a replica)");
  }
  if (c.topology == Topology::kCluster && c.cluster == "ssh") {
    throw ConfigError("--topology cluster: only on the local and docker backends (--cluster local|docker)");
  }
  if (!find_lock_algorithm(c.lock)) throw ConfigError("--lock: unknown lock algorithm '" + c.lock + "' (see lockcheck list)");
  if (!make_workload(c.workload)) throw ConfigError("--workload: unknown workload '" + c.workload + "' (see lockcheck list)");
  std::set<std::string> seen;
  for (const auto& n : c.nemesis) {
    if (!make_nemesis(n)) throw ConfigError("--nemesis: unknown nemesis '" + n + "' (see lockcheck list)");
    if (!seen.insert(n).second) throw ConfigError("--nemesis: '" + n + "' given twice");
  }
  if (c.nemesis_targeting != "random" && c.nemesis_targeting != "holder") {
    throw ConfigError("--nemesis-targeting: '" + c.nemesis_targeting + "' is not one of random, holder");
  }
  require(c.nemesis_interval_s > 0 && c.nemesis_interval_s <= 3600, "--nemesis-interval", c.nemesis_interval_s,
          "must be in (0, 3600] seconds");
  require(c.restart_delay_ms >= 0, "--restart-delay", c.restart_delay_ms, "must be >= 0 ms");
  require(c.time_limit_s > 0 && c.time_limit_s <= 7 * 24 * 3600, "--time-limit", c.time_limit_s,
          "must be in (0, 604800] seconds");
  require(c.concurrency >= 1 && c.concurrency <= 1000, "--concurrency", c.concurrency, "must be between 1 and 1000");
  require(c.keys >= 1 && c.keys <= 100000, "--keys", c.keys, "must be between 1 and 100000");
  require(c.ttl_ms >= 10 && c.ttl_ms <= 24LL * 3600 * 1000, "--ttl-ms", c.ttl_ms, "must be between 10 and 86400000");
  require(c.hold_ms_max >= -1, "--hold-ms-max", c.hold_ms_max, "must be >= 0 (or -1 for 80% of the TTL)");
  require(c.work_ms >= -1, "--work-ms", c.work_ms, "must be >= 0 (or -1 for a third of the TTL)");
  require(c.op_timeout_ms >= 1 && c.op_timeout_ms <= 600000, "--op-timeout-ms", c.op_timeout_ms,
          "must be between 1 and 600000");
  require(c.wait_replicas >= 0, "--wait", c.wait_replicas, "must be >= 0");
  require(c.checker_timeout_s > 0, "--checker-timeout", c.checker_timeout_s, "must be > 0 seconds");
  if (c.lock == "external" && c.client_cmd.empty()) throw ConfigError("--client-cmd: required with --lock external");
  if (make_workload(c.workload)->needs_fencing() && !find_lock_algorithm(c.lock)->hands_out_tokens && !c.fencing) {
    throw ConfigError("--workload " + c.workload + ": the resource accepts only writes that carry a fencing token, and "
                      "--lock " + c.lock + " hands out tokens only if its client does; add --fencing if it does "
                      "(otherwise every write would be refused and nothing would be checked)");
  }
  validate_lock_opts(c);
  if (c.results_dir.empty()) throw ConfigError("--results: must not be empty");
  for (char ch : c.label) {
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') {
      throw ConfigError("--label: '" + c.label + "' may hold only letters, digits, '-', '_' and '.'");
    }
  }
}

void to_json(nlohmann::json& j, const RunConfig& c) {
  j = nlohmann::json{
      {"cluster", c.cluster},
      {"hosts", c.hosts},
      {"topology", to_string(c.topology)},
      {"nodes", c.nodes},
      {"persistence", to_string(c.persistence)},
      {"lock", c.lock},
      {"workload", c.workload},
      {"nemesis", c.nemesis},
      {"nemesis_targeting", c.nemesis_targeting},
      {"nemesis_interval_s", c.nemesis_interval_s},
      {"restart_delay_ms", c.restart_delay_ms},
      {"time_limit_s", c.time_limit_s},
      {"concurrency", c.concurrency},
      {"keys", c.keys},
      {"ttl_ms", c.ttl_ms},
      {"hold_ms_max", c.hold_ms_max},
      {"work_ms", c.work_ms},
      {"op_timeout_ms", c.op_timeout_ms},
      {"fencing", c.fencing},
      {"client_cmd", c.client_cmd},
      {"lock_opts", c.lock_opts},
      {"wait_replicas", c.wait_replicas},
      {"checker_timeout_s", c.checker_timeout_s},
      {"seed", c.seed},
      {"label", c.label},
      {"results_dir", c.results_dir},
      {"redis_server", c.redis_server},
      {"argv", c.argv},
  };
}

namespace {

template <typename T>
void get_field(const nlohmann::json& j, const char* name, T& out) {
  auto it = j.find(name);
  if (it == j.end()) return;
  try {
    out = it->get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(std::string("config field \"") + name + "\": wrong type (" + it->dump() + ")");
  }
}

}  // namespace

void from_json(const nlohmann::json& j, RunConfig& c) {
  if (!j.is_object()) throw ConfigError("config: must be a JSON object");
  static const std::set<std::string> known = {
      "cluster", "hosts", "topology", "nodes", "persistence", "lock", "workload", "nemesis", "nemesis_targeting",
      "nemesis_interval_s", "restart_delay_ms", "time_limit_s", "concurrency", "keys", "ttl_ms", "hold_ms_max",
      "work_ms", "op_timeout_ms", "fencing", "client_cmd", "lock_opts", "wait_replicas", "checker_timeout_s", "seed",
      "label", "results_dir", "redis_server", "argv"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!known.count(it.key())) throw ConfigError("config: unknown field \"" + it.key() + "\"");
  }
  get_field(j, "cluster", c.cluster);
  get_field(j, "hosts", c.hosts);
  std::string topology = to_string(c.topology), persistence = to_string(c.persistence);
  get_field(j, "topology", topology);
  c.topology = parse_topology(topology);
  get_field(j, "persistence", persistence);
  c.persistence = parse_persistence(persistence);
  get_field(j, "nodes", c.nodes);
  get_field(j, "lock", c.lock);
  get_field(j, "workload", c.workload);
  get_field(j, "nemesis", c.nemesis);
  get_field(j, "nemesis_targeting", c.nemesis_targeting);
  get_field(j, "nemesis_interval_s", c.nemesis_interval_s);
  get_field(j, "restart_delay_ms", c.restart_delay_ms);
  get_field(j, "time_limit_s", c.time_limit_s);
  get_field(j, "concurrency", c.concurrency);
  get_field(j, "keys", c.keys);
  get_field(j, "ttl_ms", c.ttl_ms);
  get_field(j, "hold_ms_max", c.hold_ms_max);
  get_field(j, "work_ms", c.work_ms);
  get_field(j, "op_timeout_ms", c.op_timeout_ms);
  get_field(j, "fencing", c.fencing);
  get_field(j, "client_cmd", c.client_cmd);
  get_field(j, "lock_opts", c.lock_opts);
  if (!c.lock_opts.is_object()) throw ConfigError("config field \"lock_opts\": must be an object of KEY: VALUE");
  get_field(j, "wait_replicas", c.wait_replicas);
  get_field(j, "checker_timeout_s", c.checker_timeout_s);
  get_field(j, "seed", c.seed);
  get_field(j, "label", c.label);
  get_field(j, "results_dir", c.results_dir);
  get_field(j, "redis_server", c.redis_server);
  get_field(j, "argv", c.argv);
  resolve_lock(c);
}

Persistence persistence_from_string(const std::string& s) { return parse_persistence(s); }
Topology topology_from_string(const std::string& s) { return parse_topology(s); }

}  // namespace lockcheck
