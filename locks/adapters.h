// Shipped lock-library adapters (clients/): real lock libraries wrapped in the external-client protocol
// (locks/README-external.md), built by scripts/build-clients into build/clients/, and run as `--lock NAME`.
// Each is an `external` lock whose command line lockcheck makes itself: the adapter's program plus one flag
// per lock option (--lock-opt KEY=VALUE, "lock_opts" in config.json and matrix entries).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster.h"
#include "core/registry.h"

namespace lockcheck {

// kProgram: the value picks which built program runs (the adapter's `program` is the default), no flag.
enum class AdapterOptionKind { kInt, kFloat, kBool, kProgram };

struct AdapterOption {
  const char* key;   // the lock option (snake_case)
  const char* flag;  // the adapter's flag, e.g. --drift-factor ("" for kProgram)
  AdapterOptionKind kind;
  const char* help;  // what it is, with the library's default
  std::vector<std::pair<std::string, std::string>> programs = {};  // kProgram: value -> file in the clients dir
};

struct LockAdapter {
  const char* name;         // --lock NAME
  const char* library;      // e.g. github.com/go-redsync/redsync/v4
  const char* version;      // pinned in clients/go.mod, or the Debian package's
  const char* program;      // file in the clients directory (build/clients/)
  const char* interpreter;  // "" for a binary, else e.g. /usr/bin/python3
  const char* toolchain;    // what scripts/build-clients needs for it
  std::vector<AdapterOption> options;
  const char* description;    // one line for `lockcheck list`: the library and its adapter
  const char* known_defects;  // one line: what the library is known to get wrong
  const char* protocol = "resp";  // what it speaks to the nodes (LockAlgorithm::protocol)
  // Options that cannot go together (the value-checked options as JSON): why, or "" when they can. nullptr: any.
  std::string (*check)(const nlohmann::json& opts) = nullptr;
};

// The registry (locks/adapters.cc): one entry per shipped adapter.
const Registry<LockAdapter>& lock_adapters();
const LockAdapter* find_lock_adapter(const std::string& name);  // nullptr when unknown

// Where the built adapters live: $LOCKCHECK_CLIENTS_DIR, else clients/ next to the lockcheck executable
// (build/clients/ for build/lockcheck).
std::string adapters_dir();
// The adapter's program path in adapters_dir().
std::string adapter_program(const LockAdapter& a);
// The adapter's program for lock options `opts` (a kProgram option picks another than a.program). Throws
// std::invalid_argument as adapter_argv does.
std::string adapter_program(const LockAdapter& a, const nlohmann::json& opts);
// argv for the adapter with lock options `opts` (a JSON object of key -> value, values may be strings as
// given by --lock-opt). Throws std::invalid_argument naming the key (and the known keys) on an unknown key
// or a value of the wrong kind.
std::vector<std::string> adapter_argv(const LockAdapter& a, const nlohmann::json& opts);
// argv as one --client-cmd line (quoted for split_command_line).
std::string join_command_line(const std::vector<std::string>& argv);

}  // namespace lockcheck
