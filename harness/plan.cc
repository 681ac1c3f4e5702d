#include "harness/plan.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "checkers/checker.h"
#include "cluster/server_builds.h"
#include "cluster/ssh_hosts.h"
#include "harness/flags.h"
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

namespace {

// A setting's value as --dry-run shows it: what the run will use. A value that stands for a rule (-1, 0 or
// nothing, as RunConfig{} holds it) is the rule in words, or the value it gives with the rule beside it.
std::string plan_value(const ConfigField& f, const RunConfig& c) {
  const nlohmann::json v = f.get(c);
  const std::string unit = v.is_number() && *f.unit ? std::string(" ") + f.unit : "";
  if (f.effective && v.is_number_integer() && v.get<int64_t>() == -1) {
    return std::to_string(f.effective(c)) + unit + " (" + f.default_words + ")";
  }
  const bool stands_for_a_rule = v == f.get(RunConfig{}) && (v == -1 || v == 0 || v == "" || v.empty());
  if (*f.default_words && stands_for_a_rule) return f.default_words;
  return setting_text(v) + unit;
}

}  // namespace

void print_plan(const Plan& plan, std::ostream& out) {
  const RunConfig& c = plan.config;
  std::string nemeses;
  for (const auto& n : plan.nemeses) nemeses += (nemeses.empty() ? "" : ", ") + n;
  std::string checkers;
  for (const auto& n : plan.checkers) checkers += (checkers.empty() ? "" : ", ") + n;
  out << "plan:\n  lock:      " << c.lock << ": " << plan.lock->description << "\n";
  if (plan.adapter) out << "             adapter " << adapter_program(*plan.adapter, c.lock_opts) << "\n";
  out << "  server:    " << to_string(c.server) << (c.server_version.empty() ? "" : " " + c.server_version) << ", "
      << c.nodes << " node" << (c.nodes == 1 ? "" : "s") << " on the " << c.cluster << " backend ("
      << to_string(c.topology) << ")\n"
      << "  workload:  " << c.workload << ", " << c.concurrency << " clients, " << c.keys << " key"
      << (c.keys == 1 ? "" : "s") << ", " << c.time_limit_s << " s\n"
      << "  nemeses:   " << (nemeses.empty() ? "none" : nemeses + " (aimed: " + c.nemesis_targeting + ")") << "\n"
      << "  checkers:  " << checkers << "\n"
      << "  fencing:   " << (plan.fencing ? "tokens with each acquire" : "none") << "\n"
      << "settings (config key, value the run uses, flag):\n";
  for (const auto& group : flag_groups()) {
    bool header = false;
    for (const auto* rows : run_setting_tables()) {
      for (const auto& f : *rows) {
        if (group != f.group) continue;
        if (!header) out << "  " << group << ":\n";
        header = true;
        std::string key = std::string("    ") + f.key;
        key.resize(std::max<size_t>(key.size() + 1, 30), ' ');
        std::string line = key + plan_value(f, c);
        if (*f.flag) {
          line.resize(std::max<size_t>(line.size() + 1, 70), ' ');
          line += std::string("--") + f.flag;
        }
        out << line << "\n";
      }
    }
  }
}

}  // namespace lockcheck
