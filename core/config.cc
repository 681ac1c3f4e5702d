#include "core/config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <type_traits>

#include "core/json_int.h"

namespace lockcheck {

namespace {

template <typename T>
void require(bool ok, const char* flag, const T& value, const std::string& what) {
  if (!ok) throw ConfigError(std::string(flag) + ": " + std::to_string(value) + " " + what);
}

using json = nlohmann::json;
using Kind = ConfigField::Kind;

// Flag text into a value, strictly: the whole text must be the number.
int64_t parse_int(const std::string& text, const std::string& name) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0') throw ConfigError(name + ": '" + text + "' is not an integer");
  return v;
}
uint64_t parse_uint(const std::string& text, const std::string& name) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || errno != 0 || *end != '\0') {
    throw ConfigError(name + ": '" + text + "' is not a non-negative integer");
  }
  return v;
}
double parse_double(const std::string& text, const std::string& name) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0') throw ConfigError(name + ": '" + text + "' is not a number");
  return v;
}

// The member's value as config.json holds it.
template <auto M>
json get_field(const RunConfig& c) {
  const auto& v = c.*M;
  using T = std::decay_t<decltype(v)>;
  return v;
}

// A value as JSON text for an error message, invalid UTF-8 replaced (dump() would throw on it).
std::string dump_for_error(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

template <auto M>
void set_field(RunConfig& c, const json& j, const std::string& name) {
  auto& v = c.*M;
  using T = std::decay_t<decltype(v)>;
  try {
    if constexpr (std::is_same_v<T, json>) {
      if (!j.is_object()) throw ConfigError(name + ": must be an object of KEY: VALUE");
      v = j;
    } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      // An integer in T's range, never a float nor a wider integer narrowed in silence (core/json_int.h).
      if (!j.is_number_integer()) throw ConfigError(name + ": wrong type (" + dump_for_error(j) + ")");
      const std::optional<T> x = json_integer<T>(j);
      if (!x) throw ConfigError(name + ": " + dump_for_error(j) + " is out of range");
      v = *x;
    } else {
      v = j.get<T>();
    }
  } catch (const json::exception&) {
    throw ConfigError(name + ": wrong type (" + dump_for_error(j) + ")");
  }
}

// --lock-opt / --server-opt KEY=VALUE (repeatable): VALUE is JSON when it parses as JSON (3, 0.5, true), else a
// string.
void add_opt(json& opts, const std::string& kv, const std::string& name) {
  const auto eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) throw ConfigError(name + ": '" + kv + "' is not KEY=VALUE");
  const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
  if (opts.contains(key)) throw ConfigError(name + ": '" + key + "' given twice");
  json parsed = json::parse(value, nullptr, false);
  opts[key] = parsed.is_discarded() ? json(value) : parsed;
}

template <auto M>
void parse_flag_field(RunConfig& c, const std::string& text, const std::string& name) {
  auto& v = c.*M;
  using T = std::decay_t<decltype(v)>;
  if constexpr (std::is_same_v<T, std::string>) {
    v = text;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (text != "true" && text != "false") throw ConfigError(name + ": '" + text + "' is not true or false");
    v = text == "true";
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    v = parse_uint(text, name);
  } else if constexpr (std::is_integral_v<T>) {
    const int64_t x = parse_int(text, name);
    if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        x > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      throw ConfigError(name + ": " + text + " is out of range");
    }
    v = static_cast<T>(x);
  } else if constexpr (std::is_floating_point_v<T>) {
    v = parse_double(text, name);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    // A comma list; "none" (or nothing) is the empty list.
    v.clear();
    if (text == "none" || text.empty()) return;
    size_t pos = 0;
    while (true) {
      const size_t comma = text.find(',', pos);
      std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      if (item.empty() || item == "none") throw ConfigError(name + ": '" + text + "' is not a comma list");
      v.push_back(item);
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  } else if constexpr (std::is_same_v<T, json>) {
    add_opt(v, text, name);  // repeatable: each occurrence adds a key
  }
}

template <typename T>
constexpr Kind kind_of() {
  if constexpr (std::is_same_v<T, std::string>)
    return Kind::kString;
  else if constexpr (std::is_same_v<T, bool>)
    return Kind::kBool;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return Kind::kUint;
  else if constexpr (std::is_integral_v<T>)
    return Kind::kInt;
  else if constexpr (std::is_floating_point_v<T>)
    return Kind::kDouble;
  else if constexpr (std::is_same_v<T, std::vector<std::string>>)
    return Kind::kList;
  else
    return Kind::kObject;
}

template <auto M>
ConfigField row(const char* key, const char* flag, const char* help, const char* group, const char* unit,
                void (*check)(const RunConfig&) = nullptr) {
  using T = std::decay_t<decltype(std::declval<RunConfig>().*M)>;
  return ConfigField{key,  flag, help, group, unit, kind_of<T>(), &get_field<M>, &set_field<M>, &parse_flag_field<M>,
                     check};
}

// A row whose -1 means a default derived from other fields: effective(c) is the value the run uses.
ConfigField with_default(ConfigField f, int64_t (*effective)(const RunConfig&)) {
  f.effective = effective;
  return f;
}

// What the help says of a row beyond its help line: the value's name, the default in words, an earlier spelling
// of the flag (ConfigField's value_name, default_words, old_flag).
ConfigField doc(ConfigField f, const char* value_name, const char* default_words = "", const char* old_flag = "") {
  f.value_name = value_name;
  f.default_words = default_words;
  f.old_flag = old_flag;
  return f;
}

void one_of(const std::string& value, const char* flag, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  throw ConfigError(std::string(flag) + ": '" + value + "' is not one of " + list);
}

}  // namespace

// The fields in the order of config.json, the flags' --help and the report's rows. Groups: cluster, lock,
// workload, faults, checking, output (harness/flags.h prints them in that order).
const std::vector<ConfigField>& config_fields() {
  using C = RunConfig;
  // clang-format off
  static const std::vector<ConfigField> fields = {
    doc(row<&C::cluster>("cluster", "cluster", "local (server processes on this machine), docker, or ssh (--hosts)", "cluster", "",
        [](const C& c) { one_of(c.cluster, "--cluster", {"local", "docker", "ssh"}); }), "local|docker|ssh"),
    doc(row<&C::server>("server", "server", "the lock service the nodes run (lockcheck list: servers; each kind's options follow below)", "cluster", ""),
        "KIND", "redis"),
    doc(row<&C::server_opts>("server_opts", "server-opt", "KEY=VALUE: an option of the server kind (repeatable; each also has a flag of its own, see below and lockcheck list)", "cluster", ""),
        "KEY=VALUE"),
    doc(row<&C::server_version>("server_version", "server-version", "the server's version the nodes run (default: the machine's; see lockcheck list; etcd 3.4.3 is built by scripts/build-clients)", "cluster", ""),
        "VERSION", "the machine's (lockcheck list shows the builds)"),
    doc(row<&C::hosts>("hosts", "hosts", "hosts file of --cluster ssh (JSON; scripts/ssh-testbed writes one)", "cluster", "",
        [](const C& c) { if (c.cluster != "ssh" && !c.hosts.empty()) throw ConfigError("--hosts: only with --cluster ssh"); }),
        "FILE", "none"),
    doc(row<&C::nodes>("nodes", "nodes", "number of nodes", "cluster", "",
        [](const C& c) { require(c.nodes >= 1 && c.nodes <= 15, "--nodes", c.nodes, "must be between 1 and 15"); }),
        "N", "5, or what the server kind needs (6 for a Redis Cluster)"),
    doc(row<&C::lock>("lock", "lock", "lock algorithm (see lockcheck list)", "lock", ""), "NAME"),
    doc(row<&C::workload>("workload", "workload", "workload (see lockcheck list)", "workload", ""), "NAME"),
    doc(row<&C::nemesis>("nemesis", "nemesis", "comma list of faults (see lockcheck list), or none", "faults", ""), "LIST"),
    doc(row<&C::nemesis_targeting>("nemesis_targeting", "nemesis-targeting", "random, or holder: aim faults at the current lock holder and its nodes", "faults", "",
        [](const C& c) { one_of(c.nemesis_targeting, "--nemesis-targeting", {"random", "holder"}); }), "random|holder"),
    doc(row<&C::nemesis_timing>("nemesis_timing", "nemesis-timing", "random (each fault at its planned time), or lock-state: each fault waits, at most one interval, for the moment of the lock's life its rule names (docs/faults.md, Fault timing)", "faults", "",
        [](const C& c) { one_of(c.nemesis_timing, "--nemesis-timing", {"random", "lock-state"}); }), "random|lock-state"),
    row<&C::nemesis_interval_s>("nemesis_interval_s", "nemesis-interval", "seconds between a fault and its heal", "faults", "s",
        [](const C& c) { require(c.nemesis_interval_s > 0 && c.nemesis_interval_s <= 3600, "--nemesis-interval", c.nemesis_interval_s, "must be in (0, 3600] seconds"); }),
    doc(row<&C::restart_delay_ms>("restart_delay_ms", "restart-delay-ms", "how long a killed node stays down before its restart", "faults", "ms",
        [](const C& c) { require(c.restart_delay_ms >= 0, "--restart-delay-ms", c.restart_delay_ms, "must be >= 0 ms"); }),
        "", "0 ms (restart at once)", "restart-delay"),
    doc(row<&C::drift_ppm>("drift_ppm", "drift-ppm", "clock:drift: how much faster (+) or slower (-) the target nodes' clocks run, in parts per million (50000 = 5% fast; 0: drawn per fault)", "faults", "ppm",
        [](const C& c) { require(c.drift_ppm > -1000000 && c.drift_ppm <= 10000000, "--drift-ppm", c.drift_ppm, "must be in (-1000000, 10000000] ppm (a clock cannot stop or run backwards)"); }),
        "", "drawn per fault"),
    doc(row<&C::delay_ms>("delay_ms", "delay-ms", "delay: the latency added to each message of the delayed links, in ms (0: drawn per fault in [TTL/20, TTL]; the jitter stays drawn in [0, delay/2])", "faults", "ms",
        [](const C& c) { require(c.delay_ms >= 0 && c.delay_ms <= 3600000, "--delay-ms", c.delay_ms, "must be between 0 and 3600000 ms"); }),
        "", "drawn per fault in [TTL/20, TTL]"),
    doc(with_default(row<&C::pause_ms>("pause_ms", "pause-ms", "client-pause: how long the holder stops, in ms (-1: twice the TTL)", "faults", "ms",
        [](const C& c) { require(c.pause_ms >= -1 && c.pause_ms <= 3600000, "--pause-ms", c.pause_ms, "must be between 0 and 3600000 (or -1 for twice the TTL)"); }),
        [](const C& c) { return c.effective_pause_ms(); }),
        "", "twice the TTL"),
    row<&C::time_limit_s>("time_limit_s", "time-limit", "seconds the workload runs", "workload", "s",
        [](const C& c) { require(c.time_limit_s > 0 && c.time_limit_s <= 7 * 24 * 3600, "--time-limit", c.time_limit_s, "must be in (0, 604800] seconds"); }),
    row<&C::concurrency>("concurrency", "concurrency", "client processes", "workload", "",
        [](const C& c) { require(c.concurrency >= 1 && c.concurrency <= 1000, "--concurrency", c.concurrency, "must be between 1 and 1000"); }),
    row<&C::keys>("keys", "keys", "number of lock keys", "workload", "",
        [](const C& c) { require(c.keys >= 1 && c.keys <= 100000, "--keys", c.keys, "must be between 1 and 100000"); }),
    row<&C::ttl_ms>("ttl_ms", "ttl-ms", "lock TTL in ms", "lock", "ms",
        [](const C& c) { require(c.ttl_ms >= 10 && c.ttl_ms <= 24LL * 3600 * 1000, "--ttl-ms", c.ttl_ms, "must be between 10 and 86400000"); }),
    doc(with_default(row<&C::hold_ms_max>("hold_ms_max", "hold-ms-max", "longest hold in ms (-1: 80% of the TTL)", "workload", "ms",
        [](const C& c) { require(c.hold_ms_max >= -1, "--hold-ms-max", c.hold_ms_max, "must be >= 0 (or -1 for 80% of the TTL)"); }),
        [](const C& c) { return c.effective_hold_ms_max(); }),
        "", "80% of the TTL"),
    row<&C::hold_ms_min>("hold_ms_min", "hold-ms-min", "shortest hold in ms (a hold is uniform between it and the longest)", "workload", "ms",
        [](const C& c) {
          require(c.hold_ms_min >= 0 && c.hold_ms_min <= c.effective_hold_ms_max(), "--hold-ms-min", c.hold_ms_min,
                  "must be between 0 and the longest hold (" + std::to_string(c.effective_hold_ms_max()) + " ms)");
        }),
    doc(with_default(row<&C::work_ms>("work_ms", "work-ms", "set workloads: ms between read and write under the lock (-1: TTL/3)", "workload", "ms",
        [](const C& c) { require(c.work_ms >= -1, "--work-ms", c.work_ms, "must be >= 0 (or -1 for a third of the TTL)"); }),
        [](const C& c) { return c.effective_work_ms(); }),
        "", "a third of the TTL"),
    doc(row<&C::lease_margin_ms>("lease_margin_ms", "lease-margin-ms", "how long before the end of its lease (the validity its client reported) a holder stops using the lock (-1: 10% of the lease, at least 20 ms)", "workload", "ms",
        [](const C& c) { require(c.lease_margin_ms >= -1 && c.lease_margin_ms <= 3600000, "--lease-margin-ms", c.lease_margin_ms, "must be between 0 and 3600000 (or -1 for 10% of the lease, at least 20 ms)"); }),
        "", "10% of the lease, at least 20 ms"),
    doc(row<&C::work_uniform>("work_uniform", "work-uniform", "set workloads: the work between read and write is uniform in [0, 2 x --work-ms) ms, as Jepsen's etcd lock-set (rand-int (* 2 latency)); default: exactly --work-ms", "workload", ""),
        "", "off (exactly --work-ms)"),
    doc(row<&C::blind_holder>("blind_holder", "blind-holder", "set workloads: the holder reads, works and writes without checking its lease's validity (Jepsen's lock-set client); default: a careful holder that cuts its work to the validity and skips the update when none is left", "workload", ""),
        "", "off (a careful holder)"),
    row<&C::op_timeout_ms>("op_timeout_ms", "op-timeout-ms", "per-request timeout of the lock clients", "lock", "ms",
        [](const C& c) { require(c.op_timeout_ms >= 1 && c.op_timeout_ms <= 600000, "--op-timeout-ms", c.op_timeout_ms, "must be between 1 and 600000"); }),
    row<&C::fencing>("fencing", "fencing", "hand out fencing tokens with each acquire", "lock", ""),
    doc(row<&C::client_cmd>("client_cmd", "client-cmd", "command line of an external lock client (--lock external)", "lock", ""),
        "COMMAND", "none (a shipped adapter's is made from --lock NAME; required with --lock external)"),
    doc(row<&C::lock_opts>("lock_opts", "lock-opt", "KEY=VALUE: an option of the lock (repeatable; see lockcheck list)", "lock", ""),
        "KEY=VALUE"),
    row<&C::checker_timeout_s>("checker_timeout_s", "checker-timeout", "seconds of search before a checker answers unknown", "checking", "s",
        [](const C& c) { require(c.checker_timeout_s > 0, "--checker-timeout", c.checker_timeout_s, "must be > 0 seconds"); }),
    doc(row<&C::seed>("seed", "seed", "RNG seed (0: pick one; it is recorded)", "workload", ""),
        "N", "a random one, recorded in config.json"),
    doc(row<&C::label>("label", "label", "a name for the run, used in its id", "output", "",
        [](const C& c) {
          for (char ch : c.label) {
            if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') {
              throw ConfigError("--label: '" + c.label + "' may hold only letters, digits, '-', '_' and '.'");
            }
          }
        }),
        "NAME", "none (the lock and workload name the run)"),
    doc(row<&C::results_dir>("results_dir", "results", "the results folder: each run writes RESULTS/<run-id>/", "output", "",
        [](const C& c) { if (c.results_dir.empty()) throw ConfigError("--results: must not be empty"); }),
        "DIR"),
    row<&C::argv>("argv", "", "the command line as given", "", ""),
  };
  // clang-format on
  return fields;
}

const ConfigField* find_config_field(const std::string& key) {
  for (const auto& f : config_fields()) {
    if (key == f.key) return &f;
  }
  return nullptr;
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot open");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(path + ": not valid JSON (" + e.what() + ")");
  }
}

void validate_fields(const RunConfig& c) {
  for (const auto& f : config_fields()) {
    if (f.check) f.check(c);
  }
  if (c.lock == "external" && c.client_cmd.empty()) throw ConfigError("--client-cmd: required with --lock external");
  // A fault's own setting without that fault would set nothing (and a boundary search over it would search
  // nothing): refused rather than ignored.
  const auto has = [&](const char* n) { return std::find(c.nemesis.begin(), c.nemesis.end(), n) != c.nemesis.end(); };
  if (c.drift_ppm != 0 && !has("clock:drift")) throw ConfigError("--drift-ppm: only with --nemesis clock:drift");
  if (c.pause_ms != -1 && !has("client-pause")) throw ConfigError("--pause-ms: only with --nemesis client-pause");
  const bool any_delay = std::any_of(c.nemesis.begin(), c.nemesis.end(),
                                     [](const std::string& n) { return n == "delay" || n.rfind("delay:", 0) == 0; });
  if (c.delay_ms != 0 && !any_delay) throw ConfigError("--delay-ms: only with --nemesis delay (or one of its modes)");
}

void to_json(nlohmann::json& j, const RunConfig& c) {
  j = nlohmann::json::object();
  for (const auto& f : config_fields()) j[f.key] = f.get(c);
}

void from_json(const nlohmann::json& j, RunConfig& c) {
  if (!j.is_object()) throw ConfigError("config: must be a JSON object");
  for (const auto& f : config_fields()) {
    auto it = j.find(f.key);
    if (it != j.end()) f.set(c, *it, std::string("config field \"") + f.key + "\"");
  }
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (find_config_field(it.key())) continue;
    // The single-failover lock's WAIT was a field of its own; it is that lock's option now.
    if (it.key() == "wait_replicas") {
      const std::optional<int64_t> n = json_integer<int64_t>(it.value());
      if (!n) throw ConfigError("config field \"wait_replicas\": wrong type (" + it.value().dump() + ")");
      if (*n != 0 && !c.lock_opts.contains("wait_replicas")) c.lock_opts["wait_replicas"] = *n;
      continue;
    }
    // A server kind's option at the top level (how earlier versions wrote Redis' options): resolve_plan checks it.
    if (!c.server_opts.contains(it.key())) c.server_opts[it.key()] = it.value();
  }
  c.nodes_given = j.contains("nodes");
}

}  // namespace lockcheck
