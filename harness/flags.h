// The command line as data. Every command's flags are a list of tables (FlagTable): the run settings' tables
// (config_fields() today; a server spec's or a lock's table of ConfigField-shaped rows plugs in as one more entry of
// run_setting_tables()) and the command's own flags. The same tables parse the arguments and make the grouped
// --help, the CLI reference (docs/cli.md), the bash completion and --dry-run's list of settings, so none of them can
// name a flag the parser does not know.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"

namespace lockcheck {

enum class FlagArity {
  kSwitch,    // --fencing: no value
  kValue,     // --ttl-ms 1000: one value, given once
  kRepeated,  // --lock-opt KEY=VALUE: one value each time, any number of times
};

// One flag of a command.
struct FlagSpec {
  std::string name;      // without dashes: "ttl-ms"
  char short_name = 0;   // 'h' for -h; 0: none
  std::string old_name;  // an earlier spelling, still accepted with a one-line note on stderr ("" : none)
  FlagArity arity = FlagArity::kValue;
  std::string value;          // the value's name: "MS", "FILE", "DIR", "local|docker|ssh" ("" for a switch)
  std::string group;          // cluster, lock, workload, faults, checking, output; "" : the table's title
  std::string unit;           // "ms", "s", "min", "ppm" or ""
  std::string default_text;   // the real default in words ("1000 ms", "80% of the TTL"); "" : none
  std::string config_key;     // its key in config.json and matrix entries; "" : none
  std::string help;
  std::vector<std::string> choices;  // what completes its value, besides the ones in value ("a|b|c")
  std::string note;                  // said on stderr when the flag is given (a flag kept for old scripts)
  // Applies one value (a switch: "true"). Throws ConfigError naming the flag on a bad value.
  std::function<void(const std::string& text)> set;
};

struct FlagTable {
  std::string title;  // heading of its flags that have no group ("reproduce", "general")
  std::vector<FlagSpec> flags;
  // Not listed in this command's --help and reference: "see `lockcheck help run`" instead (boundary takes
  // every run setting). The parser and the completion still take them.
  std::string listed_under;
};

// The groups of run settings, in the order --help, the reference and --dry-run show them: cluster, lock, workload,
// faults, checking, output.
const std::vector<std::string>& flag_groups();

// The tables of ConfigField rows the run settings come from, in order. Today config_fields() alone; a server
// spec's or a lock's own table of rows of the same shape is one more entry here, and every generator (flags,
// help, reference, completion, dry-run) takes it without another change.
std::vector<const std::vector<ConfigField>*> run_setting_tables();

// The rows of a ConfigField table that have a flag, as flags setting `target` (which must outlive the table).
FlagTable setting_flags(const std::vector<ConfigField>& rows, RunConfig& target, const std::string& title);

// Each server kind's options (servers/: Redis' --topology, ...) as flags in the cluster group, each writing its
// parsed value into target.server_opts (a value also given by --server-opt: ConfigError naming the flag).
FlagTable server_option_flags(RunConfig& target, const std::string& title);

// The run setting whose config key, flag or earlier flag spelling is `name` (with or without "--"), in any of
// run_setting_tables(); nullptr when none.
const ConfigField* find_run_setting(const std::string& name);

// How the words after the flags are taken.
enum class Positional { kNone, kOne, kMany };

// A command: what its help, the reference and the completion say, and what the parser accepts.
struct CommandSpec {
  std::string name;        // "reproduce"
  std::string synopsis;    // "lockcheck reproduce RUN_DIR [FLAGS]"
  std::string summary;     // one line for the top help
  std::string about;       // the paragraph under the synopsis in --help
  Positional positional = Positional::kNone;
  std::string positional_name;  // "RUN_DIR", "DIR", "COMMAND" (completion: a folder, a command, a file)
  std::vector<FlagTable> tables;
};

// What parse_command found. The flags' values were applied (FlagSpec::set) in table order.
struct ParsedCommand {
  std::vector<std::string> given;        // the flags given, by their names (an old spelling: the new name)
  std::vector<std::string> positionals;  // the words that are not flags
  bool has(const std::string& flag) const;
};

// Parses args (without the program and command names) against spec's tables. An old spelling is taken as its
// flag with a note on err. Every argument must be UTF-8. Abbreviated flags are not taken: a flag is its whole
// name, so that a doc or a script names flags that exist. Throws ConfigError or
// boost::program_options::error naming the flag (cli_main: exit 2).
ParsedCommand parse_command(const CommandSpec& spec, const std::vector<std::string>& args, std::ostream& err);

// The grouped help of a command (`lockcheck CMD --help`, `lockcheck help CMD`).
void print_command_help(const CommandSpec& spec, std::ostream& out);

// The whole reference as Markdown (`lockcheck help --reference`, docs/cli.md): the top help's exit statuses,
// then each command with its flags by group: flag, value, unit, default, config key, help.
void write_reference(const std::vector<CommandSpec>& commands, const std::string& exit_statuses, std::ostream& out);

// A bash completion script for `lockcheck` (`lockcheck completion bash`): commands, each command's flags, and
// the values of flags that have choices, folders or files.
void write_bash_completion(const std::vector<CommandSpec>& commands, std::ostream& out);

// A setting's value as people write it: text as is, a list comma-joined ("none" when empty), 10 not 10.0,
// booleans on / off.
std::string setting_text(const nlohmann::json& v);

// Words wrapped at `width` columns, each line after the first indented by `indent` spaces.
std::string wrap_text(const std::string& text, size_t indent, size_t first_column, size_t width);

}  // namespace lockcheck
