// The `lockcheck` command line: `lockcheck COMMAND [FLAGS]`. Parsing happens here, once, into RunConfig;
// every bad flag or value is rejected with a message naming it (exit 2).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace lockcheck {

// Runs the command line args (without the program name). Returns the exit status (core/exit_codes.h).
int cli_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace lockcheck
