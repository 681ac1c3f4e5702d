// The `lockcheck` command line: `lockcheck COMMAND [FLAGS]`. Parsing happens here, once, into RunConfig;
// every bad flag or value is rejected with a message naming it (exit 2).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/config.h"

namespace lockcheck {

// Runs the command line args (without the program name). Returns the exit status (core/exit_codes.h).
int cli_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// `run`'s flags (without --config, --schedule, --help) as the RunConfig `run` starts from, before resolve_plan:
// what cmd_run does with them, nothing run. Throws ConfigError or boost::program_options::error naming the flag
// (exit 2 in cli_main). For the fuzz target fuzz/flags.cc.
RunConfig parse_run_flags(const std::vector<std::string>& args);

}  // namespace lockcheck
