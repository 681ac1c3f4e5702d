#include "harness/plan.h"

#include <filesystem>
#include <set>

#include "checkers/checker.h"
#include "cluster/server_builds.h"
#include "cluster/ssh_hosts.h"
#include "locks/adapters.h"
#include "locks/lock_client.h"
#include "nemesis/nemesis.h"
#include "workloads/workload.h"

namespace lockcheck {

namespace {

// --lock-opt keys: an adapter's flags, or the LockOptions.extra keys a built-in algorithm reads.
void validate_lock_opts(const RunConfig& c, const LockAlgorithm& algo, const LockAdapter* adapter) {
  if (!c.lock_opts.is_object()) throw ConfigError("--lock-opt: lock_opts must be a JSON object");
  if (adapter) {
    try {
      adapter_argv(*adapter, c.lock_opts);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(std::string("--lock-opt: ") + e.what());
    }
    std::error_code ec;
    const std::string program = adapter_program(*adapter, c.lock_opts);
    if (!std::filesystem::exists(program, ec)) {
      throw ConfigError(std::string("--lock ") + adapter->name + ": the adapter is not built (" + program +
                        " is missing; run scripts/build-clients, which needs " +
                        adapter->toolchain + ")");
    }
    return;
  }
  const std::string keys = algo.option_keys;
  std::set<std::string> known;
  size_t pos = 0;
  while (pos <= keys.size()) {
    size_t end = keys.find(',', pos);
    if (end == std::string::npos) end = keys.size();
    std::string k = keys.substr(pos, end - pos);
    k.erase(0, k.find_first_not_of(' '));
    if (!k.empty()) known.insert(k);
    pos = end + 1;
  }
  for (auto it = c.lock_opts.begin(); it != c.lock_opts.end(); ++it) {
    if (!known.count(it.key())) {
      throw ConfigError("--lock-opt: '" + it.key() + "' is not an option of " + c.lock +
                        " (known: " + (keys.empty() ? std::string("none") : keys) + ")");
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

// --server-version: the build the nodes run, resolved here so that a missing one exits 2 before anything starts
// and config.json records the version (etcd's default: the machine's). Redis without --server-version and etcd
// on SSH hosts without it run the hosts' own programs: their version is read from the nodes once they run.
void resolve_server_version(RunConfig& c) {
  if (c.server_version.empty() && (c.server == ServerKind::kRedis || c.cluster == "ssh")) return;
  if (c.cluster == "ssh" && c.server == ServerKind::kRedis) {
    throw ConfigError("--server-version: with --cluster ssh the hosts run their own redis-server (the hosts "
                      "file's redis_server); only etcd's build is shipped to the hosts");
  }
  c.server_version = resolve_server_build(c).version;
}

nlohmann::json lock_extra(const RunConfig& c, const std::string& stderr_path) {
  nlohmann::json extra = {{"client_cmd", c.client_cmd}, {"wait_replicas", c.wait_replicas}};
  if (!find_lock_adapter(c.lock) && c.lock_opts.is_object()) {
    for (auto it = c.lock_opts.begin(); it != c.lock_opts.end(); ++it) extra[it.key()] = it.value();
  }
  if (!stderr_path.empty() && !extra.contains("client_stderr_path")) extra["client_stderr_path"] = stderr_path;
  return extra;
}

Plan resolve_plan(RunConfig c) {
  resolve_lock(c);
  validate_fields(c);
  if (c.cluster == "ssh") load_ssh_hosts(c.hosts);  // throws ConfigError naming the file and field
  Plan plan;
  plan.lock = find_lock_algorithm(c.lock);
  if (!plan.lock) throw ConfigError("--lock: unknown lock algorithm '" + c.lock + "' (see lockcheck list)");
  plan.adapter = find_lock_adapter(c.lock);
  if (plan.lock->topology != c.topology) {
    throw ConfigError("--lock " + c.lock + ": needs --topology " + to_string(plan.lock->topology) + " (given " +
                      to_string(c.topology) + ")");
  }
  if (plan.lock->server != c.server) {
    throw ConfigError("--lock " + c.lock + ": needs --server " + to_string(plan.lock->server) + " (given " +
                      to_string(c.server) + ")");
  }
  resolve_server_version(c);  // after the cheap checks: it may start the server program to ask its version
  plan.workload = workload_registry().find(c.workload);
  if (!plan.workload) throw ConfigError("--workload: unknown workload '" + c.workload + "' (see lockcheck list)");
  std::set<std::string> seen;
  for (const auto& n : c.nemesis) {
    if (!make_nemesis(n)) throw ConfigError("--nemesis: unknown nemesis '" + n + "' (see lockcheck list)");
    if (!seen.insert(n).second) throw ConfigError("--nemesis: '" + n + "' given twice");
  }
  plan.nemeses = c.nemesis;
  const auto workload = plan.workload->make();
  if (workload->needs_fencing() && !plan.lock->hands_out_tokens && !c.fencing) {
    throw ConfigError("--workload " + c.workload +
                      ": the resource accepts only writes that carry a fencing token, and "
                      "--lock " +
                      c.lock +
                      " hands out tokens only if its client does; add --fencing if it does "
                      "(otherwise every write would be refused and nothing would be checked)");
  }
  validate_lock_opts(c, *plan.lock, plan.adapter);
  plan.fencing = c.fencing || workload->needs_fencing();
  plan.checkers = checkers_for(c);
  plan.config = std::move(c);
  return plan;
}

std::vector<std::string> checkers_for(const RunConfig& c) {
  const WorkloadInfo* w = workload_registry().find(c.workload);
  if (!w) throw ConfigError("--workload: unknown workload '" + c.workload + "' (see lockcheck list)");
  std::vector<std::string> names = w->make()->checkers();
  // Whenever a nemesis runs, whether its faults took effect is judged too: a fault that never happened is not a
  // test passed.
  if (!c.nemesis.empty()) names.push_back("faults");
  // A subprocess client may report that its library warned it of a lost lock (protocol 2's "lost" event): how
  // timely those warnings are is judged whenever such a client runs.
  const LockAlgorithm* lock = find_lock_algorithm(c.lock);
  if (lock != nullptr && lock->external) names.push_back("loss-notice");
  return names;
}

void validate(const RunConfig& c) { (void)resolve_plan(c); }

}  // namespace lockcheck
