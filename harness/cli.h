// The `lockcheck` command line: `lockcheck COMMAND [FLAGS]`. Parsing happens here, once, into RunConfig;
// every bad flag or value is rejected with a message naming it (exit 2).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "core/config.h"
#include "harness/flags.h"

namespace lockcheck {

// Runs the command line args (without the program name). Returns the exit status (core/exit_codes.h).
int cli_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `run`'s flags (without --config, --schedule, --help) as the RunConfig `run` starts from, before resolve_plan:
// what cmd_run does with them, nothing run. Throws ConfigError or boost::program_options::error naming the flag
// (exit 2 in cli_main). For the fuzz target fuzz/flags.cc.
RunConfig parse_run_flags(const std::vector<std::string>& args);

// The flags `lockcheck COMMAND` takes, by name without dashes, and their earlier spellings (still taken, with a
// note); nullopt when there is no such command. What the docs tests hold a synopsis's flags against.
struct CommandFlags {
  std::vector<std::string> flags;
  std::vector<std::string> old_names;
};
std::optional<CommandFlags> command_flags(const std::string& command);

// The command names, in the order the top help lists them.
std::vector<std::string> command_names();

// Every command's spec (its flag tables bound to options nothing reads): what the top help, the reference and the
// completion are made from.
std::vector<CommandSpec> command_specs();

}  // namespace lockcheck
