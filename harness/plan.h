// A test is data, resolved once: the CLI flags or a config.json become a RunConfig (core/config.h) at the edge,
// and resolve_plan() checks it field by field and against the registries, and looks up the parts it names: the
// server kind (its options, the build the nodes run, its abilities on the backend), the lock algorithm (and the
// shipped library adapter behind it, and whether the server serves the protocol it speaks), the workload, the
// nemeses (whether the cluster has every ability each needs) and the checkers that will judge the history. The
// runner and the matrix work from the Plan; nothing resolves a name again.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/server_spec.h"
#include "cluster/ssh_hosts.h"
#include "core/config.h"
#include "locks/lock_client.h"

namespace lockcheck {

struct LockAlgorithm;
struct LockAdapter;
struct WorkloadInfo;
struct NemesisInfo;

struct Plan {
  RunConfig config;                        // client_cmd made for a shipped adapter, server_version resolved
  const ServerSpec* server = nullptr;      // never null in a resolved plan
  nlohmann::json server_options;           // every option of the server kind, defaults filled in
  ServerBuild build;                       // what the nodes run (on ssh without --server-version: the hosts' own)
  Abilities abilities;                     // the server kind's on the run's backend
  bool power_shim = false;                 // a nemesis needs power loss: the nodes start with the power shim
  bool ship_build = false;                 // the build's programs go to the hosts (ssh with --server-version)
  const LockAlgorithm* lock = nullptr;     // never null in a resolved plan
  const LockAdapter* adapter = nullptr;    // the shipped lock library behind --lock, or null
  const WorkloadInfo* workload = nullptr;  // never null in a resolved plan
  std::vector<std::string> nemeses;        // as given ("partition", "failover:split-brain"), each known
  std::vector<std::string> checkers;       // the workload's checkers, + "faults" when a nemesis runs
  bool fencing = false;                    // the lock clients hand out fencing tokens (--fencing or the workload)
};

// Resolves c: for a shipped adapter sets client_cmd from its lock_opts, then checks every field
// (validate_fields) and every name against its registry, and the combinations (a fencing workload needs
// tokens the harness can vouch for; lock_opts known to the algorithm). Throws ConfigError naming the flag.
Plan resolve_plan(RunConfig c);

// The run settings (config.json keys) that have no effect in plan's run, for the report to leave out (results.json
// "settings_not_applying"): the settings only some workloads read that the run's does not (Workload::run_settings:
// --work-ms without a set workload, --hold-ms-max without lock); with no nemesis, every fault setting but the list
// itself; else the fault settings that no nemesis of the run reads (Nemesis::run_settings: --pause-ms without
// client-pause, --restart-delay-ms without kill or power-loss, --drift-ppm without clock:drift).
std::vector<std::string> settings_not_applying(const Plan& plan);
// plan.server_options without the options that have no effect with them (ServerSpec::option_applies).
nlohmann::json applying_server_options(const Plan& plan);

// The checkers that judge a history of c's workload: the workload's, + "faults" when a nemesis ran. Needs only
// the workload's name (a stored run is checked even where its lock adapter is not built). Throws ConfigError.
std::vector<std::string> checkers_for(const RunConfig& c);

// The server part of resolve_plan alone (the fields checked, the server kind's options, its build, its abilities
// on the backend; no lock, workload or nemesis looked up): what make_cluster needs, for the tests and benchmarks
// that start a cluster without a run. Throws ConfigError naming the flag.
Plan resolve_server_plan(RunConfig c);

// What `--dry-run` prints of a resolved plan: the lock (and the adapter's program), the workload, the nemeses,
// the checkers, then every run setting by group, each with its resolved value (a derived default as the value
// the run uses, with its rule in words), unit and flag. Every table of run_setting_tables() (harness/flags.h).
void print_plan(const Plan& plan, std::ostream& out);

// resolve_plan, keeping only whether it throws.
void validate(const RunConfig& c);

// What a backend (--cluster) can do to the links between servers, whatever the server kind.
Abilities backend_abilities(const std::string& backend);

// The run's server made ready (ServerSpec::make with the plan's options and build). remote_control: commands and
// faults cross docker exec or ssh.
ServerRun plan_server_run(const Plan& plan);

// The server kinds' view of an SSH hosts file (their names and older fields), and a hosts file read with it.
SshHostsSchema ssh_hosts_schema();

// For a shipped adapter (--lock redsync, ...; locks/adapters.h): sets client_cmd to the adapter's command line
// with its lock_opts as flags. Other locks: unchanged. Throws ConfigError on an unknown or ill-typed option.
void resolve_lock(RunConfig& c);

// LockOptions.extra for the run's lock clients: client_cmd and, for built-in algorithms, the lock_opts (an adapter's options are flags in its client_cmd instead). stderr_path: where an external client's
// stderr goes ("" for /dev/null).
nlohmann::json lock_extra(const RunConfig& c, const std::string& stderr_path = "");

// A run's lock client options for one process: the nodes as `party` (its client slot, "c0") reaches them through
// the cluster's network, their own addresses, the Sentinels, the timeouts, fencing, a seed derived from the run's
// and lock_extra (stderr_path: lock_extra's). What the runner gives each process, and the lock contract test too.
LockOptions run_lock_options(const Plan& plan, const Cluster& cluster, const std::string& party, int process,
                             const std::string& stderr_path = "");

}  // namespace lockcheck
