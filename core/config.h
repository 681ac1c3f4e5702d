// The configuration of one run: a plain struct, parsed once at the edge (CLI flags or config.json) and
// validated there, written into every run's config.json so that `lockcheck rerun` can replay it exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockcheck {

// A bad flag, bad value or bad config file (exit status 2). what() names the flag or field.
class ConfigError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct RunConfig {
  std::string cluster = "local";                 // --cluster local|docker|ssh
  std::string server = "redis";                  // --server: a name from server_registry() (servers/registry.h)
  // The server kind's own options (--server-opt KEY=VALUE, or each option's own flag, e.g. --topology): a JSON
  // object, checked against the kind's table by harness/plan.h. Keys config.json has at its top level that are no
  // field of this table land here too (earlier versions wrote Redis' options there).
  nlohmann::json server_opts = nlohmann::json::object();
  std::string server_version;                    // --server-version: which build the nodes run ("": the machine's)
  std::string hosts;                             // --hosts FILE: the ssh backend's hosts (cluster/ssh_hosts.h)
  int nodes = 5;                                 // --nodes: lock nodes (the server kind may say otherwise)
  std::string lock = "single";                   // --lock: a name from lock_registry()
  std::string workload = "lock";                 // --workload
  std::vector<std::string> nemesis;              // --nemesis a,b,c; empty means none
  std::string nemesis_targeting = "random";      // --nemesis-targeting random|holder
  std::string nemesis_timing = "random";         // --nemesis-timing random|lock-state (nemesis/timing.h)
  double nemesis_interval_s = 5.0;               // --nemesis-interval: seconds between fault and heal
  int64_t restart_delay_ms = 0;                  // --restart-delay-ms: how long a killed node stays down
  int64_t drift_ppm = 0;                         // --drift-ppm: clock:drift's rate (0: drawn per fault)
  int64_t delay_ms = 0;                          // --delay-ms: delay's added latency (0: drawn per fault)
  int64_t pause_ms = -1;                         // --pause-ms: client-pause's length (-1: 2 x TTL)
  double time_limit_s = 10.0;                    // --time-limit
  int concurrency = 5;                           // --concurrency: client processes at any time
  int keys = 1;                                  // --keys: lock keys lock-0 .. lock-(keys-1)
  int64_t ttl_ms = 1000;                         // --ttl-ms
  int64_t hold_ms_max = -1;                      // --hold-ms-max: max hold; -1 means ttl_ms * 0.8
  int64_t hold_ms_min = 0;                       // --hold-ms-min: shortest hold (a hold is uniform in [min, max])
  int64_t work_ms = -1;                          // --work-ms (set workloads); -1 means ttl_ms / 3
  int64_t lease_margin_ms = -1;                  // --lease-margin-ms: a holder stops using the lock this long
                                                 // before its lease ends; -1 means 10% of the lease, >= 20 ms
  int64_t op_timeout_ms = 500;                   // --op-timeout-ms: per-request timeout of the clients
  bool fencing = false;                          // --fencing
  bool work_uniform = false;                     // --work-uniform: set workloads' work uniform in [0, 2 x work_ms)
  bool blind_holder = false;                     // --blind-holder: set workloads' holder ignores its validity
  std::string client_cmd;                        // --client-cmd (lock external; made by resolve_lock for adapters)
  nlohmann::json lock_opts = nlohmann::json::object();  // --lock-opt KEY=VALUE: LockOptions.extra / adapter flags
  double checker_timeout_s = 60;                        // --checker-timeout
  uint64_t seed = 0;                                    // --seed; 0 on the CLI means "pick one", then recorded
  std::string label;                                    // --label: a name for the run (matrix entry), in its id
  std::string results_dir = "results";                  // --results
  bool progress = true;                                 // --no-progress turns the progress line off
  std::vector<std::string> argv;                        // the command line as given, for the report
  // Not in config.json: whether nodes was given (flag, config file or matrix entry); when not, the server kind's
  // default applies (harness/plan.h), and nodes_from_server says it differed from 5 (the run says so).
  bool nodes_given = false;
  bool nodes_from_server = false;

  int64_t effective_hold_ms_max() const { return hold_ms_max >= 0 ? hold_ms_max : ttl_ms * 8 / 10; }
  int64_t effective_work_ms() const { return work_ms >= 0 ? work_ms : ttl_ms / 3; }
  int64_t effective_pause_ms() const { return pause_ms >= 0 ? pause_ms : 2 * ttl_ms; }
};

// Throws ConfigError naming the flag when a field is out of range (every field's own rule in config_fields(),
// and the rules between fields: hosts and cluster). Names of parts (server, lock, workload, nemesis) and the
// server kind's options are checked against their registries one floor up, by harness/plan.h's resolve_plan().
void validate_fields(const RunConfig& c);

// Reads a JSON file. Throws ConfigError naming the file when it cannot be opened or is not valid JSON.
nlohmann::json read_json_file(const std::string& path);

// Every field of config.json (written with every field; missing fields keep their defaults; bad values throw
// ConfigError naming the field). A top-level key that is no field goes into server_opts (resolve_plan checks it
// against the server kind's options), and the former field "wait_replicas" into lock_opts when it is not 0.
void to_json(nlohmann::json& j, const RunConfig& c);
void from_json(const nlohmann::json& j, RunConfig& c);

// One table of RunConfig's fields drives its JSON (to_json / from_json), the `lockcheck run` flags (harness/
// cli.cc), the range checks (validate_fields) and the report's configuration table (report/report.cc). A new
// field is one member in RunConfig plus one row in config_fields() (core/config.cc).
struct ConfigField {
  enum class Kind { kString, kInt, kUint, kDouble, kBool, kEnum, kList, kObject };
  const char* key;    // in config.json: "ttl_ms"
  const char* flag;   // the `run` flag without dashes ("ttl-ms"); "" when it has none (argv)
  const char* help;   // the flag's --help line
  const char* group;  // cluster, lock, workload, faults, checking or output: its group in --help, the CLI
                      // reference and the report's configuration rows ("" = not shown)
  const char* unit;   // "ms", "s", "ppm" or "" (shown after the value; a flag whose unit is not seconds names it)
  Kind kind;
  // The field as JSON, as config.json holds it.
  nlohmann::json (*get)(const RunConfig&);
  // Sets the field from JSON (config.json) or from the flag's text (`from_flag`: "5", "a,b", "true").
  // Throws ConfigError naming the field (`--flag` for flag text, `config field "key"` for JSON).
  void (*set)(RunConfig&, const nlohmann::json&, const std::string& name);
  void (*parse_flag)(RunConfig&, const std::string& text, const std::string& name);
  // The field's own range rule: throws ConfigError naming `--flag` when the value is out of range.
  void (*check)(const RunConfig&);
  // For a field whose -1 means "a default derived from other fields" (hold_ms_max, work_ms): the value the run
  // uses (RunConfig's effective_*, which the workloads read). nullptr for the other fields.
  int64_t (*effective)(const RunConfig&) = nullptr;
  // What --help, the CLI reference, the bash completion and --dry-run say of the flag (harness/flags.h):
  const char* value_name = "";     // the value's name ("MS", "FILE", "local|docker|ssh"); "": from kind and unit
  const char* default_words = "";  // the default in words where the value says too little ("80% of the TTL");
                                   // "": the value RunConfig{} holds
  const char* old_flag = "";       // an earlier spelling of the flag, still accepted with a note naming this one
};
const std::vector<ConfigField>& config_fields();
const ConfigField* find_config_field(const std::string& key);  // nullptr when unknown

}  // namespace lockcheck
