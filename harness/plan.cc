#include "harness/plan.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include <algorithm>
#include <map>
#include <mutex>

#include "checkers/checker.h"
#include "core/random.h"
#include "cluster/ssh_hosts.h"
#include "harness/flags.h"
#include "locks/adapters.h"
#include "locks/lock_client.h"
#include "nemesis/nemesis.h"
#include "servers/registry.h"
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

namespace {

// The server kind's options: its own as given; another kind's option at that kind's default is dropped (config.json
// files of earlier versions hold every Redis option whatever the server); anything else is refused, naming it.
// Then the node count the kind wants when --nodes was not given, and the rules between its options.
void resolve_server(Plan& plan, RunConfig& c) {
  const ServerSpec& spec = server_spec(c.server);
  plan.server = &spec;
  nlohmann::json given = nlohmann::json::object();
  for (auto it = c.server_opts.begin(); it != c.server_opts.end(); ++it) {
    const auto& own = spec.options();
    if (std::any_of(own.begin(), own.end(), [&](const ServerOption& o) { return it.key() == o.key; })) {
      given[it.key()] = it.value();
      continue;
    }
    const std::string owner = server_kind_with_option(it.key());
    if (!owner.empty()) {
      for (const auto& o : find_server_spec(owner)->options()) {
        if (it.key() != o.key) continue;
        if (it.value() == o.default_value) break;  // an earlier config.json's default: nothing asked
        throw ConfigError(std::string("--") + o.flag + ": an option of --server " + owner + ", not of --server " +
                          spec.name());
      }
      continue;
    }
    std::string known;
    for (const auto& o : spec.options()) known += (known.empty() ? "" : ", ") + std::string(o.key);
    throw ConfigError("'" + it.key() + "': neither a config field nor an option of --server " + spec.name() +
                      " (its options: " + (known.empty() ? std::string("none") : known) + ")");
  }
  c.server_opts = given;
  plan.server_options = resolve_server_options(spec, given);
  if (!c.nodes_given) {
    const int n = spec.default_nodes(plan.server_options);
    c.nodes_from_server = n != c.nodes;
    c.nodes = n;
  }
  const std::string why = spec.check_options(plan.server_options, c.nodes, c.cluster);
  if (!why.empty()) throw ConfigError(why);
}

// --server-version: the build the nodes run, resolved here so that a missing one exits 2 before anything starts
// and config.json records the version. On SSH hosts without --server-version the hosts run their own programs
// (their version is read from the nodes once they run), and the harness's own tools are this machine's.
// The builds of a kind with these options, found once per process (finding one may start the server's program, a
// JVM for ZooKeeper: a matrix resolves every entry).
std::vector<ServerBuild> builds_of(const ServerSpec& spec, const nlohmann::json& options) {
  static std::mutex mu;
  static std::map<std::string, std::vector<ServerBuild>> found;
  const std::string key = spec.name() + " " + options.dump() + " " + servers_dir();
  std::lock_guard<std::mutex> lock(mu);
  auto it = found.find(key);
  if (it == found.end()) it = found.emplace(key, spec.builds(options)).first;
  return it->second;
}

void resolve_build(Plan& plan, RunConfig& c) {
  const ServerSpec& spec = *plan.server;
  const std::vector<ServerBuild> builds = builds_of(spec, plan.server_options);
  if (c.cluster == "ssh" && c.server_version.empty()) {
    if (!builds.empty()) plan.build.tools = builds.front().tools;
    return;
  }
  std::string there;
  for (const auto& b : builds) {
    if (c.server_version.empty() || b.version == c.server_version) {
      plan.build = b;
      c.server_version = b.version;
      plan.ship_build = c.cluster == "ssh";
      return;
    }
    there += (there.empty() ? "" : ", ") + b.version + " (" + b.origin + ")";
  }
  if (c.server_version.empty()) {
    throw ConfigError("--server " + spec.name() + ": no " + spec.name() + " build on this machine (" +
                      spec.install_hint() + ")");
  }
  throw ConfigError("--server-version " + c.server_version + ": no " + spec.name() + " " + c.server_version +
                    " on this machine (there: " + (there.empty() ? std::string("none") : there) + "; " +
                    spec.install_hint() + ")");
}

// Whether the server serves what the lock speaks; the message names the kinds that would.
void check_protocol(const Plan& plan, const RunConfig& c) {
  const std::string speaks = plan.lock->protocol;
  if (speaks == "*") return;
  const auto served = plan.server->protocols(plan.server_options);
  if (std::find(served.begin(), served.end(), speaks) != served.end()) return;
  std::string serves;
  for (const auto& p : served) serves += (serves.empty() ? "" : ", ") + p;
  std::string how;
  for (const auto& e : server_registry()) {
    const nlohmann::json opts = e.spec->options_serving(speaks);
    if (opts.is_null()) continue;
    std::string flags = std::string("--server ") + e.name;
    for (const auto& o : e.spec->options()) {
      if (opts.contains(o.key)) flags += std::string(" --") + o.flag + " " + (opts[o.key].is_string() ? opts[o.key].get<std::string>() : opts[o.key].dump());
    }
    how += (how.empty() ? "" : ", or ") + flags;
  }
  throw ConfigError("--lock " + c.lock + ": speaks " + speaks + ", and --server " + plan.server->name() +
                    " serves " + serves + " as configured" +
                    (how.empty() ? std::string(" (no server kind serves it)") : " (use " + how + ")"));
}

// Every nemesis's needs against the cluster's abilities: one message naming the fault, the server and the
// backend, and why.
void check_abilities(Plan& plan, const RunConfig& c) {
  plan.abilities = plan.server->abilities(plan.server_options).both(backend_abilities(c.cluster));
  for (const auto& name : c.nemesis) {
    const auto n = make_nemesis(name);
    for (const Ability a : n->needs(c.nemesis_targeting == "holder")) {
      if (a == Ability::kPowerLoss) plan.power_shim = true;
      if (plan.abilities.has(a)) continue;
      throw ConfigError("--nemesis " + name + (c.nemesis_targeting == "holder" ? " with --nemesis-targeting holder" : "") +
                        ": needs to " + describe(a) + ", which " + plan.server->name() + " on the " + c.cluster +
                        " backend cannot: " + plan.abilities.why_not(a));
    }
  }
}

}  // namespace

Abilities backend_abilities(const std::string& backend) {
  Abilities a = Abilities::basic();
  for (Ability x : {Ability::kLeader, Ability::kPrimary, Ability::kKeyHolders}) a.grant(x);  // the server's to say
  if (backend == "docker") a.refuse(Ability::kDelayPeers, "its images have no tc netem");
  return a;
}

ServerRun plan_server_run(const Plan& plan) {
  ServerSetup s;
  s.options = plan.server_options;
  s.build = plan.build;
  s.nodes = plan.config.nodes;
  s.ttl_ms = plan.config.ttl_ms;
  s.seed = plan.config.seed;
  s.remote_control = plan.config.cluster != "local";
  return make_server_run(*plan.server, s);
}

SshHostsSchema ssh_hosts_schema() {
  SshHostsSchema schema;
  for (const auto& e : server_registry()) {
    SshHostsSchema::Kind k;
    k.name = e.name;
    k.legacy_programs = e.spec->legacy_host_programs();
    for (const auto& p : e.spec->legacy_host_ports()) k.legacy_ports.push_back({p.field, {p.label, p.offset}});
    schema.kinds.push_back(k);
  }
  return schema;
}

nlohmann::json lock_extra(const RunConfig& c, const std::string& stderr_path) {
  nlohmann::json extra = {{"client_cmd", c.client_cmd}};
  if (!find_lock_adapter(c.lock) && c.lock_opts.is_object()) {
    for (auto it = c.lock_opts.begin(); it != c.lock_opts.end(); ++it) extra[it.key()] = it.value();
  }
  if (!stderr_path.empty() && !extra.contains("client_stderr_path")) extra["client_stderr_path"] = stderr_path;
  return extra;
}

LockOptions run_lock_options(const Plan& plan, const Cluster& cluster, const std::string& party, int process,
                             const std::string& stderr_path) {
  const RunConfig& c = plan.config;
  LockOptions lo;
  for (size_t n = 0; n < cluster.nodes().size(); ++n) lo.nodes.push_back(cluster.endpoint_for(party, n));
  for (const auto& n : cluster.nodes()) lo.node_addresses.push_back(n.endpoint);
  for (const auto& s : cluster.sentinels()) lo.sentinels.push_back(s.endpoint);
  lo.op_timeout = std::chrono::milliseconds(c.op_timeout_ms);
  lo.connect_timeout = std::chrono::milliseconds(std::min<int64_t>(c.op_timeout_ms, 1000));
  lo.fencing = plan.fencing;
  lo.seed = derive_seed(c.seed, 1000 + static_cast<uint64_t>(process));
  lo.extra = lock_extra(c, stderr_path);
  return lo;
}

Plan resolve_server_plan(RunConfig c) {
  validate_fields(c);
  Plan plan;
  resolve_server(plan, c);
  if (c.cluster == "ssh") load_ssh_hosts(c.hosts, ssh_hosts_schema());  // ConfigError naming the file and field
  plan.abilities = plan.server->abilities(plan.server_options).both(backend_abilities(c.cluster));
  resolve_build(plan, c);
  plan.config = std::move(c);
  return plan;
}

std::vector<std::string> settings_not_applying(const Plan& plan) {
  // What the nemesis driver itself reads for any nemesis (nemesis/driver.h): shown whenever a nemesis runs.
  static const std::set<std::string> kEveryNemesis = {"nemesis", "nemesis_targeting", "nemesis_timing",
                                                      "nemesis_interval_s"};
  std::set<std::string> read;
  for (const auto& n : plan.nemeses) {
    if (auto nemesis = make_nemesis(n)) {
      for (const auto& s : nemesis->run_settings()) read.insert(s);
    }
  }
  std::vector<std::string> out;
  // The settings only some workloads read: shown when the run's workload reads them.
  std::set<std::string> some_workloads, this_workload;
  for (const auto& w : workload_registry()) {
    for (const auto& s : w.make()->run_settings()) {
      some_workloads.insert(s);
      if (plan.workload == &w || (!plan.workload && w.name == plan.config.workload)) this_workload.insert(s);
    }
  }
  for (const auto& f : config_fields()) {
    if (some_workloads.count(f.key) && !this_workload.count(f.key)) out.push_back(f.key);
  }
  for (const auto& f : config_fields()) {
    if (std::string(f.group) != "faults") continue;
    const bool applies = kEveryNemesis.count(f.key) ? (f.key == std::string("nemesis") || !plan.nemeses.empty())
                                                     : read.count(f.key) > 0;
    if (!applies) out.push_back(f.key);
  }
  return out;
}

nlohmann::json applying_server_options(const Plan& plan) {
  if (!plan.server || !plan.server_options.is_object()) return plan.server_options;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [k, v] : plan.server_options.items()) {
    if (plan.server->option_applies(plan.server_options, k)) out[k] = v;
  }
  return out;
}

Plan resolve_plan(RunConfig c) {
  resolve_lock(c);
  validate_fields(c);
  Plan plan;
  resolve_server(plan, c);
  if (c.cluster == "ssh") load_ssh_hosts(c.hosts, ssh_hosts_schema());  // ConfigError naming the file and field
  plan.lock = find_lock_algorithm(c.lock);
  if (!plan.lock) throw ConfigError("--lock: unknown lock algorithm '" + c.lock + "' (see lockcheck list)");
  plan.adapter = find_lock_adapter(c.lock);
  check_protocol(plan, c);
  plan.workload = workload_registry().find(c.workload);
  if (!plan.workload) throw ConfigError("--workload: unknown workload '" + c.workload + "' (see lockcheck list)");
  std::set<std::string> seen;
  for (const auto& n : c.nemesis) {
    if (!make_nemesis(n)) throw ConfigError("--nemesis: unknown nemesis '" + n + "' (see lockcheck list)");
    if (!seen.insert(n).second) throw ConfigError("--nemesis: '" + n + "' given twice");
  }
  plan.nemeses = c.nemesis;
  check_abilities(plan, c);
  resolve_build(plan, c);  // after the cheap checks: it may start the server program to ask its version
  const auto workload = plan.workload->make();
  if (*plan.lock->no_fencing && (c.fencing || workload->needs_fencing())) {
    throw ConfigError(std::string(c.fencing ? "--fencing" : "--workload " + c.workload + " needs fencing tokens, and") +
                      ": --lock " + c.lock + " hands out no fencing tokens: " + plan.lock->no_fencing);
  }
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
  std::string options;
  for (const auto& [key, value] : plan.server_options.items()) {
    options += (options.empty() ? "" : ", ") + key + "=" + setting_text(value);
  }
  out << "  server:    " << c.server << (c.server_version.empty() ? "" : " " + c.server_version) << ", " << c.nodes
      << " node" << (c.nodes == 1 ? "" : "s") << " on the " << c.cluster << " backend"
      << (options.empty() ? "" : " (" + options + ")") << "\n"
      << "  workload:  " << c.workload << ", " << c.concurrency << " clients, " << c.keys << " key"
      << (c.keys == 1 ? "" : "s") << ", " << c.time_limit_s << " s\n"
      << "  nemeses:   " << (nemeses.empty() ? "none" : nemeses + " (aimed: " + c.nemesis_targeting + ", timed: " + c.nemesis_timing + ")") << "\n"
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
    // The server kind's own options, resolved (servers/), with the cluster settings.
    if (group == "cluster" && plan.server) {
      for (const auto& opt : plan.server->options()) {
        std::string line = std::string("    ") + opt.key;
        line.resize(std::max<size_t>(line.size() + 1, 30), ' ');
        line += setting_text(plan.server_options.value(opt.key, opt.default_value)) +
                (*opt.unit ? std::string(" ") + opt.unit : "");
        line.resize(std::max<size_t>(line.size() + 1, 70), ' ');
        out << line << "--" << opt.flag << "\n";
      }
    }
  }
}

}  // namespace lockcheck
