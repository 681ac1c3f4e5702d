#include "harness/cli.h"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <boost/program_options/errors.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <type_traits>

#include "checkers/checker.h"
#include "checkers/export.h"
#include "checkers/import.h"
#include "cluster/clock_shim.h"
#include "cluster/power_loss.h"
#include "cluster/ssh_cluster.h"
#include "cluster/ssh_hosts.h"
#include "core/cluster.h"
#include "core/config.h"
#include "core/exit_codes.h"
#include "core/history.h"
#include "core/huge_pages.h"
#include "core/version.h"
#include "docker/docker_cluster.h"
#include "harness/boundary.h"
#include "harness/flags.h"
#include "harness/install_layout.h"
#include "harness/matrix.h"
#include "harness/matrix_shard.h"
#include "harness/night.h"
#include "harness/plan.h"
#include "harness/reproduce.h"
#include "harness/rerun.h"
#include "harness/runner.h"
#include "harness/seed_search.h"
#include "harness/trend.h"
#include "locks/adapters.h"
#include "locks/lock_client.h"
#include "nemesis/nemesis.h"
#include "nemesis/schedule.h"
#include "report/report.h"
#include "servers/registry.h"
#include "sys/process.h"
#include "workloads/workload.h"

namespace lockcheck {

namespace {

namespace cli_fs = std::filesystem;

// The exit statuses, as the top help and the reference list them.
const std::vector<std::pair<std::string, std::string>>& exit_status_table() {
  static const std::vector<std::pair<std::string, std::string>> statuses = {
      {"0", "valid: every checker found the history valid (or the command did what it was asked)"},
      {"1", "an anomaly was found (test-all: an expectation not met; trend: something got worse)"},
      {"2", "usage or configuration error: a bad flag or value, or a server program not found, named in the "
              "message; nothing was run"},
      {"3", "the harness or the cluster failed (a server that will not start, no Docker engine, a client stuck)"},
      {"4", "a checker could not decide (unknown)"},
      {"128+N", "interrupted by signal N (130: SIGINT, Ctrl-C; 143: SIGTERM); what was done so far is kept"},
  };
  return statuses;
}

// ---- Flags of a command's own (the run settings' come from their tables: harness/flags.h) ----

template <typename T>
T parse_number(const std::string& text, const std::string& flag) {
  errno = 0;
  char* end = nullptr;
  if constexpr (std::is_floating_point_v<T>) {
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(v)) {
      throw ConfigError(flag + ": '" + text + "' is not a number");
    }
    return static_cast<T>(v);
  } else {
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || errno != 0 || *end != '\0') throw ConfigError(flag + ": '" + text + "' is not an integer");
    if (v < static_cast<long long>(std::numeric_limits<T>::min()) ||
        v > static_cast<long long>(std::numeric_limits<T>::max())) {
      throw ConfigError(flag + ": " + text + " is out of range");
    }
    return static_cast<T>(v);
  }
}

// A number as its default reads: 10, 0.05.
template <typename T>
std::string number_default(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    std::ostringstream s;
    s << v;
    return s.str();
  } else {
    return std::to_string(v);
  }
}

// A flag setting *target (a number or text); its default is what *target holds when the table is made.
template <typename T>
FlagSpec value_flag(const std::string& name, const std::string& value, T* target, const std::string& help) {
  FlagSpec f;
  f.name = name;
  f.value = value;
  f.help = help;
  if constexpr (std::is_same_v<T, std::string>) {
    f.default_text = target->empty() ? "" : *target;
    f.set = [target](const std::string& text) { *target = text; };
  } else {
    f.default_text = number_default(*target);
    f.set = [target, name](const std::string& text) { *target = parse_number<T>(text, "--" + name); };
  }
  return f;
}

FlagSpec switch_flag(const std::string& name, bool* target, const std::string& help) {
  FlagSpec f;
  f.name = name;
  f.arity = FlagArity::kSwitch;
  f.help = help;
  f.set = [target](const std::string&) { *target = true; };
  return f;
}

// The few things a flag's row says besides its name, value and help.
FlagSpec with(FlagSpec f, const std::string& unit, const std::string& default_text, const std::string& group = "",
              const std::string& config_key = "") {
  f.unit = unit;
  if (!default_text.empty()) {
    f.default_text = default_text;
  } else if (!unit.empty() && !f.default_text.empty()) {
    f.default_text += " " + unit;  // the number the options hold, in its unit
  }
  f.group = group;
  f.config_key = config_key;
  return f;
}

// A command's spec without its flags: what --help, the top help and the reference say of it.
CommandSpec command(const std::string& name, const std::string& synopsis, const std::string& summary,
                    const std::string& about, Positional positional = Positional::kNone,
                    const std::string& positional_name = "") {
  CommandSpec s;
  s.name = name;
  s.synopsis = synopsis;
  s.summary = summary;
  s.about = about;
  s.positional = positional;
  s.positional_name = positional_name;
  return s;
}

// --budget-min MIN (was --budget) of the searches, reproduce and boundary.
FlagSpec budget_flag(double* minutes, const std::string& help) {
  FlagSpec f = with(value_flag("budget-min", "MIN", minutes, help), "min", "");
  f.old_name = "budget";
  return f;
}

// --help and --dry-run: every command has them.
struct General {
  bool help = false;
  bool dry_run = false;
};
FlagTable general_flags(General& g, const std::string& dry_run_help) {
  FlagSpec help = switch_flag("help", &g.help, "this help (the same as lockcheck help COMMAND)");
  help.short_name = 'h';
  return {"general", {help, switch_flag("dry-run", &g.dry_run, dry_run_help)}, ""};
}
const char* kDryRunStartsNothing = "parse and resolve as the command would, print what it would do; start nothing, "
                                   "write nothing, exit 0";

// The results folder flag, one name across commands: where a command writes its own folder.
FlagSpec results_flag(std::string* dir, const std::string& help) {
  return with(value_flag("results", "DIR", dir, help), "", "", "output", "results_dir");
}

// A RUN_DIR argument; ConfigError when it is missing.
std::string one_positional(const ParsedCommand& p, const std::string& what) {
  if (p.positionals.empty() || p.positionals.front().empty()) throw ConfigError(what);
  return p.positionals.front();
}

std::string join_words(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// ---- The commands. Each is its options, the spec made from them (tables bound to the options) and its body. ----

// `run --schedule FILE`: the stored schedule, read and checked against the run's nemeses (ConfigError naming
// the flag). A run given no --nemesis takes the schedule's nemeses and targeting.
std::optional<Schedule> schedule_flag(const std::string& file, RunConfig& c) {
  if (file.empty()) return std::nullopt;
  Schedule s;
  try {
    s = read_schedule_file(file);
  } catch (const ConfigError& e) {
    throw ConfigError(std::string("--schedule: ") + e.what());
  }
  if (c.nemesis.empty()) {
    c.nemesis = s.nemesis;
    c.nemesis_targeting = s.targeting;
  }
  check_schedule_nemeses(s, c.nemesis, "--schedule");
  return s;
}

// The run settings' tables as flags setting c (a server spec's table is one more entry of run_setting_tables()).
std::vector<FlagTable> run_setting_flags(RunConfig& c, const std::string& listed_under = "") {
  std::vector<FlagTable> tables;
  for (const auto* rows : run_setting_tables()) {
    tables.push_back(setting_flags(*rows, c, "run settings"));
    tables.back().listed_under = listed_under;
    // The names the registries know complete --lock, --workload and --nemesis.
    for (auto& f : tables.back().flags) {
      if (f.name == "lock") {
        for (const auto& a : lock_registry()) f.choices.push_back(a.name);
      } else if (f.name == "workload") {
        for (const auto& w : workload_registry()) f.choices.push_back(w.name);
      } else if (f.name == "nemesis") {
        for (const auto& n : nemesis_registry()) f.choices.push_back(n.name);
      } else if (f.name == "server") {
        for (const auto& e : server_registry()) f.choices.push_back(e.name);
      }
    }
  }
  // The server kinds' options go with the run settings (one table: shown once where a command lists it by
  // reference).
  for (auto& f : server_option_flags(c, "run settings").flags) tables.back().flags.push_back(std::move(f));
  return tables;
}

struct RunCommand {
  RunConfig c;
  General g;
  std::string config_file, schedule_file;
  int seeds = 0;
  bool no_progress = false;

  CommandSpec spec() {
    CommandSpec s = command("run", "lockcheck run [FLAGS]",
        "run one test: start the cluster, drive the workload, inject faults, check, report",
        "Runs one test end to end: starts the nodes, runs the workload's clients against the lock while the nemeses "
        "inject their faults, checks the history and writes RESULTS/<run-id>/ (config.json, history.jsonl, "
        "results.json, report.html). The verdict is the exit status: 0 valid, 1 invalid, 4 unknown. Each setting's "
        "config key is what a config.json or a matrix entry gives it.");
    s.tables = run_setting_flags(c);
    s.tables.push_back(
        {"run",
         {value_flag("config", "FILE", &config_file,
                     "run the configuration in FILE (a config.json); only --results, --seed, --schedule, "
                     "--no-progress may go with it"),
          with(value_flag("schedule", "FILE", &schedule_file,
                          "replay the fault schedule in FILE (a run's schedule.json) by offset instead of planning "
                          "one from the seed; without --nemesis its nemeses and targeting are the run's"),
               "", "none (the seed plans the faults)", "faults"),
          with(value_flag("seeds", "N", &seeds,
                          "seed search: run N times with seeds SEED, SEED+1, ... and report how many found an "
                          "anomaly and the median time to the first"),
               "", "off (one run)"),
          with(switch_flag("no-progress", &no_progress, "no progress line"), "", "", "output")},
         ""});
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }

  int execute(const ParsedCommand& p, const std::vector<std::string>& args, std::ostream& out) {
    RunConfig run = c;
    if (!config_file.empty()) {
      for (const auto& name : p.given) {
        if (name != "config" && name != "results" && name != "seed" && name != "no-progress" && name != "schedule" &&
            name != "dry-run") {
          throw ConfigError("--" + name + ": cannot be combined with --config (edit the file instead)");
        }
      }
      std::ifstream in(config_file);
      if (!in) throw ConfigError("--config: cannot open " + config_file);
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(in);
      } catch (const nlohmann::json::exception& e) {
        throw ConfigError("--config: " + config_file + " is not valid JSON (" + e.what() + ")");
      }
      run = RunConfig{};
      from_json(j, run);
      if (p.has("results")) run.results_dir = c.results_dir;
      if (p.has("seed")) run.seed = c.seed;
    } else {
      run.nodes_given = p.has("nodes");
      if (find_lock_adapter(run.lock) && p.has("client-cmd")) {
        throw ConfigError("--client-cmd: --lock " + run.lock +
                          " runs its shipped adapter (use --lock external for your own)");
      }
    }
    run.progress = !no_progress;
    run.argv = {"lockcheck", "run"};
    run.argv.insert(run.argv.end(), args.begin(), args.end());
    const std::optional<Schedule> replay = schedule_flag(schedule_file, run);
    if (p.has("seeds") && replay) throw ConfigError("--schedule: cannot be combined with --seeds");
    if (g.dry_run) {
      if (p.has("seeds") && (seeds < 1 || seeds > 1000)) throw ConfigError("--seeds: must be between 1 and 1000");
      const Plan plan = resolve_plan(run);
      out << "run --dry-run: nothing started, nothing written\n";
      if (!config_file.empty()) out << "configuration: " << config_file << "\n";
      if (replay) out << "schedule: " << schedule_file << " replayed (" << fault_count(*replay) << " faults)\n";
      print_plan(plan, out);
      const std::string name = run.label.empty() ? run.lock + "-" + run.workload : run.label;
      if (p.has("seeds")) {
        const uint64_t first = run.seed ? run.seed : 1;
        out << "seed search: " << seeds << " runs, seeds " << first << " to " << first + seeds - 1 << "\n";
      }
      out << "would write: " << run.results_dir << "/<UTC time>-" << name << "-s<seed>/ (config.json, history.jsonl, "
          << "results.json, report.html), " << run.results_dir << "/latest and index.html\n";
      return kExitValid;
    }
    if (p.has("seeds")) return run_seeds(run, seeds, out);
    return run_test(run, out, replay ? &*replay : nullptr).exit_code;
  }
};

// `check --format edn|porcupine FILE`: another tool's lock history, checked with the lock workload's checkers.
// Prints the verdict; writes nothing.
int check_foreign_file(const std::string& path, const std::string& format, std::optional<double> timeout,
                       std::ostream& out) {
  History h;
  {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw ConfigError(path + ": cannot open");
    // One read of the whole file (a character-by-character copy through istreambuf_iterator took a tenth of the
    // check of a 10^5-op EDN history). The text is freed before the checkers run, which reuse its memory (a
    // 10^6-op EDN file is 180 MB: kept, the peak was 505 MB).
    std::string text(static_cast<size_t>(std::max<std::streamoff>(0, in.tellg())), '\0');
    in.seekg(0);
    if (!in.read(text.data(), static_cast<std::streamsize>(text.size()))) throw ConfigError(path + ": cannot read");
    h = format == "edn" ? import_edn(text, path) : import_porcupine(text, path);
  }
  RunConfig cfg;  // the lock workload's checkers
  if (timeout) cfg.checker_timeout_s = *timeout;
  out << "checking " << h.size() << " ops of " << path << " (" << format << ") ...\n";
  const nlohmann::json verdict = check_history(cfg, h);
  print_checker_lines(out, verdict);
  return exit_code_for(*validity_from_string(verdict["valid"].get<std::string>()));
}

// `check` is a short process that allocates and frees a few arrays of the history's size in every checker and
// the report: glibc would hand each back to the kernel (munmap, or a trim of the heap) and the next one would be
// faulted in again page by page (on a million-op history about a fifth of its page faults). Freed memory is
// kept for reuse instead; the peak is unchanged.
//
// The heap's next 768 MiB of address space is then advised to transparent huge pages (core/huge_pages.h): one
// malloc reserves it (address space only: nothing is touched), free leaves it as the heap's top (under the
// trim threshold, so it stays), and every later allocation of the check is carved from it: the small arrays
// and tables that advising each big vector missed as well. Measured on the project's VM (interleaved runs,
// task-clock): contended 10^5 history 669 -> 213 page faults, median 75.7 -> 57.4 ms back to back (the same
// within noise after 3 s idle: 91 vs 94 ms mean); gen 10^6 9,224 -> 622 faults, 479-498 -> 398-625 ms back to
// back, median 860 -> 744 ms after 3 s idle; peak RSS 337 -> 340 MB. A history needing more than the range
// goes on in ordinary pages; where the address space is limited (ulimit -v) the malloc fails and nothing is
// advised. LOCKCHECK_HUGE_PAGES=0 leaves it out.
void set_up_check_heap() {
  mallopt(M_MMAP_MAX, 0);  // every block from the heap (a freed one is unmapped otherwise, above 32 MiB)
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  constexpr size_t kAdvisedHeap = size_t{768} << 20;  // below the trim threshold: free keeps it
  if (void* p = std::malloc(kAdvisedHeap)) {
    advise_huge_pages(p, kAdvisedHeap);
    std::free(p);
  }
}


struct CheckCommand {
  General g;
  double timeout = 0;
  std::string format;
  bool verdict_only = false;

  CommandSpec spec() {
    CommandSpec s = command("check", "lockcheck check RUN_DIR [FLAGS] | lockcheck check --format edn|porcupine FILE",
        "re-run the checkers on a stored history, or judge another tool's history (--format)",
        "Re-runs the workload's checkers on RUN_DIR/history.jsonl and prints the verdict. It writes "
        "RUN_DIR/results.json (the new verdict; the run's other fields kept), RUN_DIR/report.html and the results "
        "folder's index.html; --verdict-only leaves the run untouched and writes nothing. With --format edn|porcupine "
        "it judges FILE, a history written by another tool (Jepsen/Knossos ops, Porcupine operations, as lockcheck "
        "export writes them), with the lock workload's checkers, and writes nothing.",
        Positional::kOne, "RUN_DIR|FILE");
    s.tables.push_back(
        {"check",
         {with(value_flag("checker-timeout", "S", &timeout, "seconds of search before a checker answers unknown"), "s",
               "the run's (its config.json's checker_timeout_s; 60 for --format)", "checking"),
          value_flag("format", "edn|porcupine", &format,
                     "check FILE written by another tool: edn (Jepsen/Knossos ops) or porcupine (operations), as "
                     "export writes them"),
          with(switch_flag("verdict-only", &verdict_only,
                           "print the verdict and write nothing: RUN_DIR's results.json, report.html and the results "
                           "index stay as they were"),
               "", "off (results.json, report.html and index.html rewritten)", "output")},
         ""});
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }

  int execute(const ParsedCommand& p, std::ostream& out) {
    std::optional<double> t;
    if (p.has("checker-timeout")) {
      if (timeout <= 0) throw ConfigError("--checker-timeout: must be > 0 seconds");
      t = timeout;
    }
    if (p.has("format")) {
      if (format != "edn" && format != "porcupine")
        throw ConfigError("--format: '" + format + "' is not one of edn, porcupine");
      const std::string file = one_positional(p, "check --format: FILE is required");
      if (g.dry_run) {
        if (!std::ifstream(file)) throw ConfigError(file + ": cannot open");
        out << "check --dry-run: nothing checked, nothing written\nwould check " << file << " (" << format
            << ") with the lock workload's checkers (" << join_words(checkers_for(RunConfig{}), ", ")
            << "); --format writes nothing\n";
        return kExitValid;
      }
      set_up_check_heap();
      return check_foreign_file(file, format, t, out);
    }
    const std::string dir = one_positional(p, "check: RUN_DIR is required (a folder under results/)");
    if (g.dry_run) {
      const RunConfig cfg = read_run_config(dir);
      if (!std::ifstream(dir + "/history.jsonl")) throw ConfigError(dir + "/history.jsonl: cannot open");
      out << "check --dry-run: nothing checked, nothing written\nwould check " << dir << "/history.jsonl with "
          << join_words(checkers_for(cfg), ", ") << " (timeout " << (t ? *t : cfg.checker_timeout_s) << " s)\n";
      if (verdict_only) {
        out << "would write nothing (--verdict-only)\n";
      } else {
        out << "would write: " << dir << "/results.json, " << dir << "/report.html, "
            << cli_fs::path(dir).parent_path().string() << "/index.html\n";
      }
      return kExitValid;
    }
    set_up_check_heap();
    return check_run(dir, out, t, !verdict_only).exit_code;
  }
};

struct RerunCommand {
  General g;
  bool no_progress = false;
  CommandSpec spec() {
    CommandSpec s = command("rerun", "lockcheck rerun RUN_DIR",
        "the stored configuration and seed again; RUN_DIR/repro: a minimal reproduction, run and compared",
        "Runs a stored run's configuration and seed again with its fault schedule replayed, beside it in the same "
        "results folder, and says how far the new run's fault timeline matched the old one. RUN_DIR may be a minimal "
        "reproduction's folder (RUN/repro, written by lockcheck reproduce): its case runs once and the command says "
        "whether the anomaly came back.",
        Positional::kOne, "RUN_DIR");
    s.tables.push_back(
        {"rerun", {with(switch_flag("no-progress", &no_progress, "no progress line"), "", "", "output")}, ""});
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }
  int execute(const ParsedCommand& p, std::ostream& out) {
    return rerun(one_positional(p, "rerun: RUN_DIR is required (a folder under results/)"), out, g.dry_run,
                 no_progress);
  }
};

struct ReproduceCommand {
  General g;
  ReproduceOptions o;
  CommandSpec spec() {
    CommandSpec s = command("reproduce", "lockcheck reproduce RUN_DIR [FLAGS]",
        "an INVALID run's reproduction rate, then its smallest reliable reproduction (RUN_DIR/repro)",
        "How often an INVALID run's anomaly comes back, then the smallest case that still shows it (shorter, fewer "
        "faults, processes and keys), written to RUN_DIR/repro/ (lockcheck rerun RUN_DIR/repro runs it). Exit 1 when "
        "the anomaly reproduced, 0 when it did not.",
        Positional::kOne, "RUN_DIR");
    s.tables.push_back({"reproduce",
                        {value_flag("tries", "N", &o.tries, "runs per candidate (N)"),
                         value_flag("rate", "R", &o.rate,
                                    "a candidate is kept when the anomaly kind comes back in at least R of the N runs"),
                         budget_flag(&o.budget_min, "minutes for the whole search; it ends at most one run past it, "
                                                    "with the best case so far")},
                        ""});
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }
  int execute(const ParsedCommand& p, std::ostream& out) {
    o.dry_run = g.dry_run;
    return reproduce(one_positional(p, "reproduce: RUN_DIR is required (an INVALID run's folder under results/)"), o,
                     out);
  }
};

struct BoundaryCommand {
  General g;
  RunConfig c;
  BoundaryOptions o;
  std::string anomaly, scale = "linear";
  CommandSpec spec() {
    CommandSpec s = command("boundary", "lockcheck boundary --param NAME --from A --to B [FLAGS] [RUN SETTINGS]",
        "where the verdict flips as one numeric setting moves",
        "Where a run's verdict flips as one numeric setting moves: N seeds a probe, bisection between the last safe "
        "and the first unsafe value. The run is given by run's setting flags. Writes RESULTS/boundary-NAME-LOCK-TIME/ "
        "(boundary.json, boundary.md, boundary.html).");
    s.tables.push_back(
        {"boundary",
         {with(value_flag("param", "NAME", &o.param,
                          "the setting: a config key or run flag (drift_ppm, --pause-ms, ttl_ms), or lock-opt:KEY"),
               "", "none (required)"),
          with(value_flag("from", "A", &o.from, "one end of the range, in the setting's unit"), "", "none (required)"),
          with(value_flag("to", "B", &o.to, "the other end (either end may be the unsafe one)"), "", "none (required)"),
          value_flag("seeds", "N", &o.seeds, "runs per probe: seeds SEED, SEED+1, ..."),
          with(value_flag("unsafe-at", "R", &o.unsafe_at, "a probe is unsafe at R of N invalid runs or more"), "",
               "0, which means 9 of 10"),
          with(value_flag("resolution", "X", &o.resolution,
                          "stop when each edge is bracketed this tightly, in the setting's unit"),
               "", "0, which means a 32nd of the range"),
          budget_flag(&o.budget_min, "minutes for the whole search (hard: no run starts that could end past it)"),
          value_flag("scale", "linear|log", &scale, "linear, or log (geometric midpoints; both ends > 0)"),
          with(value_flag("anomaly", "CHECKER[:KIND]", &anomaly, "count only this anomaly"), "", "any invalid run")},
         ""});
    for (auto& t : run_setting_flags(c, "run")) s.tables.push_back(std::move(t));
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }
  int execute(const ParsedCommand& p, const std::vector<std::string>& args, std::ostream& out) {
    for (const char* required : {"param", "from", "to"}) {
      if (!p.has(required)) throw ConfigError(std::string("--") + required + ": required");
    }
    if (scale != "linear" && scale != "log") throw ConfigError("--scale: '" + scale + "' is not one of linear, log");
    o.log_scale = scale == "log";
    if (p.has("anomaly")) o.target = parse_anomaly_flag(anomaly);
    o.dry_run = g.dry_run;
    RunConfig run = c;
    run.nodes_given = p.has("nodes");
    run.progress = false;
    run.argv = {"lockcheck", "boundary"};
    run.argv.insert(run.argv.end(), args.begin(), args.end());
    return boundary(run, o, out);
  }
};

struct ReportCommand {
  General g;
  bool index = false;
  std::string results_dir = "results";
  CommandSpec spec() {
    CommandSpec s = command("report", "lockcheck report RUN_DIR | lockcheck report --index [--results DIR]",
        "re-render a run's report.html (--index: the results folder's index.html)",
        "Writes RUN_DIR/report.html again from the run's files (config.json, history.jsonl, results.json), or with "
        "--index the results folder's index.html (every run, test-all and trend folder in it).",
        Positional::kOne, "RUN_DIR");
    s.tables.push_back({"report",
                        {switch_flag("index", &index, "rewrite the index of every run in the results folder"),
                         results_flag(&results_dir, "the results folder (with --index)")},
                        ""});
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }
  int execute(const ParsedCommand& p, std::ostream& out) {
    if (index) {
      if (!p.positionals.empty()) throw ConfigError("report: give RUN_DIR or --index, not both");
      if (g.dry_run) {
        if (!cli_fs::is_directory(results_dir)) throw ConfigError("--results: " + results_dir + " is not a folder");
        out << "report --dry-run: nothing written\nwould write: " << results_dir << "/index.html\n";
        return kExitValid;
      }
      write_index(results_dir);
      out << "index: " << results_dir << "/index.html\n";
      return kExitValid;
    }
    const std::string dir = one_positional(p, "report: RUN_DIR or --index is required");
    if (g.dry_run) {
      bool any = false;
      for (const char* f : {"config.json", "history.jsonl", "results.json"}) any = any || cli_fs::exists(dir + "/" + f);
      if (!any) throw ConfigError(dir + ": not a run folder (no config.json, history.jsonl or results.json)");
      out << "report --dry-run: nothing written\nwould write: " << dir << "/report.html\n";
      return kExitValid;
    }
    write_report(dir);
    out << "report: " << dir << "/report.html\n";
    return kExitValid;
  }
};

struct ExportCommand {
  General g;
  std::string format, output;
  CommandSpec spec() {
    CommandSpec s = command("export", "lockcheck export --format edn|porcupine RUN_DIR [--output FILE]",
        "write a run's history as Jepsen EDN ops or Porcupine operations",
        "Writes RUN_DIR/history.jsonl as Jepsen EDN ops (for Knossos or Elle) or Porcupine operations (JSON), to "
        "standard output or to FILE. --output names a file, not a results folder (that is --results on the commands "
        "that write folders).",
        Positional::kOne, "RUN_DIR");
    FlagSpec output_flag = with(value_flag("output", "FILE", &output, "write here instead of standard output"), "",
                                "standard output", "output");
    output_flag.short_name = 'o';
    s.tables.push_back({"export",
                        {with(value_flag("format", "edn|porcupine", &format,
                                         "edn (Jepsen ops for Knossos/Elle) or porcupine"),
                              "", "none (required)"),
                         output_flag},
                        ""});
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }
  int execute(const ParsedCommand& p, std::ostream& out) {
    if (format != "edn" && format != "porcupine")
      throw ConfigError("--format: '" + format + "' is not one of edn, porcupine");
    const std::string dir = one_positional(p, "export: RUN_DIR is required (a folder under results/)");
    History h = read_history(dir + "/history.jsonl");
    if (g.dry_run) {
      out << "export --dry-run: nothing written\nwould write " << h.size() << " ops of " << dir << "/history.jsonl as "
          << format << " to " << (output.empty() ? std::string("standard output") : output) << "\n";
      return kExitValid;
    }
    std::string text = format == "edn" ? export_edn(h) : export_porcupine(h).dump() + "\n";
    if (output.empty()) {
      out << text;
    } else {
      std::ofstream f(output);
      if (!(f << text)) throw std::runtime_error("cannot write " + output);
    }
    return kExitValid;
  }
};

struct CleanCommand {
  General g;
  std::string hosts;
  CommandSpec spec() {
    CommandSpec s = command("clean", "lockcheck clean [--hosts FILE]",
        "remove Docker containers, networks and volumes left by killed runs (--hosts: on ssh hosts)",
        "Removes what runs killed with SIGKILL left behind: the Docker containers, networks and volumes lockcheck "
        "labelled, or with --hosts what --cluster ssh runs left on those hosts.");
    s.tables.push_back({"clean",
                        {with(value_flag("hosts", "FILE", &hosts,
                                         "instead: what killed --cluster ssh runs left on the hosts of FILE"),
                              "", "none (the Docker engine)")},
                        ""});
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }
  int execute(const ParsedCommand& p, std::ostream& out) {
    if (g.dry_run) {
      out << "clean --dry-run: nothing removed\n";
      if (p.has("hosts")) {
        const SshHosts h = load_ssh_hosts(hosts, ssh_hosts_schema());
        out << "would remove what killed runs left on the " << h.hosts.size() << " hosts of " << hosts << "\n";
      } else {
        out << "would remove the containers, networks and volumes lockcheck labelled on the Docker engine\n";
      }
      return kExitValid;
    }
    if (p.has("hosts")) return ssh_clean(load_ssh_hosts(hosts, ssh_hosts_schema()), out);
    return docker_clean(out);
  }
};

// The shipped matrices' names (for --matrix's completion and help).
std::vector<std::string> shipped_matrices() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : cli_fs::directory_iterator(matrix_dir(), ec)) {
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// --history DIR and --fail-on-trend of test-all and merge (harness/trend.h).
void add_history_flags(FlagTable& t, std::string* history, bool* fail_on_trend) {
  t.flags.push_back(with(value_flag("history", "DIR", history,
                                    "a folder of earlier test-all folders: the summary opens with what changed since "
                                    "the last nights (lockcheck trend), trend.html beside it"),
                         "", "none"));
  t.flags.push_back(
      switch_flag("fail-on-trend", fail_on_trend, "with --history: exit 1 also when something got worse"));
}
void check_fail_on_trend(bool fail, const std::string& history) {
  if (fail && history.empty()) throw ConfigError("--fail-on-trend: needs --history DIR");
}

struct TestAllCommand {
  General g;
  TestAllOptions o;
  CommandSpec spec() {
    CommandSpec s = command("test-all", "lockcheck test-all [FLAGS]",
        "a matrix of configurations with expected verdicts (JUnit XML, HTML summary)",
        "Runs every entry of a matrix (each a configuration, its seeds and the verdict it must reach) and writes "
        "RESULTS/test-all-MATRIX-TIME/ (junit.xml, summary.html, summary.json); exit 0 when every expectation was met, "
        "1 otherwise.");
    FlagSpec matrix = value_flag("matrix", "FILE|NAME", &o.matrix,
                                 "a matrix file, or a shipped matrix by name (" + join_words(shipped_matrices(), ", ") +
                                     ")");
    matrix.choices = shipped_matrices();
    FlagTable t{"test-all",
                {matrix,
                 with(value_flag("junit", "FILE", &o.junit_path, "write JUnit XML here"), "",
                      "junit.xml in the test-all folder", "output"),
                 value_flag("parallel", "N", &o.parallel, "runs at a time"),
                 with(value_flag("shard", "K/N", &o.shard,
                                 "run only share K of N of the runs (then: lockcheck merge)"),
                      "", "all the runs"),
                 results_flag(&o.results_dir, "the results folder: the test-all folder and every run go there")},
                ""};
    add_history_flags(t, &o.history, &o.fail_on_trend);
    s.tables.push_back(std::move(t));
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }
  int execute(const ParsedCommand&, std::ostream& out) {
    check_fail_on_trend(o.fail_on_trend, o.history);
    if (!o.history.empty() && !o.shard.empty()) {
      throw ConfigError("--history: a shard judges nothing; give it to merge");
    }
    o.dry_run = g.dry_run;
    return test_all(o, out);
  }
};

struct MergeCommand {
  General g;
  MergeOptions o;
  CommandSpec spec() {
    CommandSpec s = command("merge", "lockcheck merge DIR... [FLAGS]",
        "join the folders of test-all --shard K/N runs into one JUnit, summary and exit status",
        "Joins the test-all folders of the shards of one matrix (test-all --shard K/N) into one folder, "
        "RESULTS/test-all-MATRIX-TIME/, judged as one test-all: one JUnit file, one summary, one exit status.",
        Positional::kMany, "DIR");
    FlagTable t{"merge",
                {with(value_flag("junit", "FILE", &o.junit_path, "write JUnit XML here"), "",
                      "junit.xml in the merged folder", "output"),
                 results_flag(&o.results_dir, "the results folder the merged folder goes to")},
                ""};
    add_history_flags(t, &o.history, &o.fail_on_trend);
    s.tables.push_back(std::move(t));
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }
  int execute(const ParsedCommand& p, std::ostream& out) {
    check_fail_on_trend(o.fail_on_trend, o.history);
    o.dirs = p.positionals;
    o.dry_run = g.dry_run;
    return merge_test_all(o, out);
  }
};

struct TrendCommand {
  General g;
  TrendOptions o;
  CommandSpec spec() {
    CommandSpec s = command("trend", "lockcheck trend DIR... [FLAGS]",
        "what changed over the last nights of test-all folders, told apart from noise",
        "What changed over the last nights (test-all folders, or the folders merge writes; ordered by their own start "
        "time), told apart from noise. Writes RESULTS/trend-MATRIX-TIME/ (trend.json, trend.html). Exit 0 nothing got "
        "worse, 1 an expectation newly unmet or an entry weaker, 2 bad input.",
        Positional::kMany, "DIR");
    FlagSpec out_flag = with(value_flag("out", "DIR", &o.out_dir,
                                        "write trend.json and trend.html into DIR itself (kept for old scripts; the "
                                        "output-folder flag of every command is --results)"),
                             "", "none", "output");
    out_flag.note = "--out DIR still writes into DIR itself; the output-folder flag of every command is --results DIR "
                    "(trend then writes DIR/trend-MATRIX-TIME/)";
    s.tables.push_back(
        {"trend",
         {results_flag(&o.results_dir, "the results folder: trend writes RESULTS/trend-MATRIX-TIME/ there"), out_flag,
          value_flag("alpha", "P", &o.alpha,
                     "weaker / stronger when the two-sided Fisher exact test gives p below this")},
         ""});
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }
  int execute(const ParsedCommand& p, std::ostream& out) {
    o.dirs = p.positionals;
    o.dry_run = g.dry_run;
    return trend_command(o, out);
  }
};

void print_list(std::ostream& out) {
  out << "servers (--server; default " << RunConfig{}.server << "), their options and versions on this machine "
         "(--server-version; default: the first):\n";
  for (const auto& e : server_registry()) {
    const ServerSpec& spec = *e.spec;
    const nlohmann::json defaults = resolve_server_options(spec, nlohmann::json::object());
    std::string protocols;
    for (const auto& p : spec.protocols(defaults)) protocols += (protocols.empty() ? "" : ", ") + p;
    out << "  " << std::left << std::setw(20) << e.name << spec.description() << "\n"
        << "  " << std::setw(20) << "" << "speaks: " << protocols << "\n";
    std::string lacks;
    const Abilities a = spec.abilities(defaults);
    for (const Ability x : kAllAbilities) {
      if (!a.has(x)) lacks += (lacks.empty() ? "" : ", ") + std::string(to_string(x));
    }
    if (!lacks.empty()) out << "  " << std::setw(20) << "" << "faults it lacks: " << lacks << "\n";
    for (const auto& o : spec.options()) {
      out << "  " << std::setw(20) << "" << "  --" << std::setw(24) << o.flag << o.help << "\n";
    }
    const auto builds = spec.builds(defaults);
    if (builds.empty()) out << "  " << std::setw(20) << "" << "no build here: " << spec.install_hint() << "\n";
    for (const auto& b : builds) out << "  " << std::setw(20) << "" << "version " << b.version << ": " << b.origin << "\n";
  }
  out << "lock algorithms (--lock):\n";
  for (const auto& a : lock_registry()) {
    out << "  " << std::left << std::setw(20) << a.name << a.description << "\n"
        << "  " << std::setw(20) << ""
        << "known defect: " << a.known_defects << "\n";
  }
  out << "lock libraries (--lock NAME runs the shipped adapter; --lock-opt KEY=VALUE sets its options):\n";
  for (const auto& a : lock_adapters()) {
    std::error_code ec;
    const bool built = std::filesystem::exists(adapter_program(a), ec);
    out << "  " << std::left << std::setw(20) << a.name << a.library << " " << a.version
        << "  [speaks " << a.protocol << "]"
        << (built ? "" : "  [not built: scripts/build-clients]") << "\n";
    for (const auto& o : a.options) {
      out << "  " << std::setw(20) << ""
          << "  " << std::setw(20) << o.key << " " << o.help << "\n";
    }
  }
  out << "lock options of the built-in algorithms (--lock-opt KEY=VALUE):\n";
  for (const auto& a : lock_registry()) {
    if (*a.option_keys) out << "  " << std::left << std::setw(20) << a.name << a.option_keys << "\n";
  }
  out << "workloads (--workload):\n";
  for (const auto& w : workload_registry())
    out << "  " << std::left << std::setw(20) << w.name << w.description << "\n";
  out << "nemeses (--nemesis, comma list; default none):\n";
  for (const auto& n : nemesis_registry()) out << "  " << std::left << std::setw(20) << n.name << n.description << "\n";
  out << "checkers:\n";
  for (const auto& c : checker_registry()) out << "  " << std::left << std::setw(20) << c.name << c.description << "\n";
}

struct ListCommand {
  General g;
  CommandSpec spec() {
    CommandSpec s = command("list", "lockcheck list",
        "lock algorithms, lock libraries, workloads, nemeses and checkers, one line each",
        "Lists what --server, --lock, --lock-opt, --workload and --nemesis take, and the checkers, one line each; the "
        "server versions and lock adapters found on this machine.");
    s.tables.push_back(general_flags(g, kDryRunStartsNothing));
    return s;
  }
  int execute(const ParsedCommand&, std::ostream& out) {
    if (g.dry_run) {
      out << "list --dry-run: would list " << lock_registry().size() << " lock algorithms, " << lock_adapters().size()
          << " lock libraries, " << workload_registry().size() << " workloads, " << nemesis_registry().size()
          << " nemeses and " << checker_registry().size()
          << " checkers, and ask each server program on this machine its version\n";
      return kExitValid;
    }
    print_list(out);
    return kExitValid;
  }
};

void print_version(std::ostream& out) {
  const InstallLayout& l = this_install_layout();
  out << "lockcheck " << kLockcheckVersion << "\n"
      << "commit:      " << git_commit() << "\n"
      << "build:       " << LOCKCHECK_BUILD_TYPE << "\n"
      << "binary:      " << l.exe
      << (l.installed ? " (installed under " + l.prefix + ")" : std::string(" (build tree)")) << "\n"
      << "clock shim:  " << clock_shim_library() << (cli_fs::exists(clock_shim_library()) ? "" : " (missing)") << "\n"
      << "power shim:  " << power_shim_library() << (cli_fs::exists(power_shim_library()) ? "" : " (missing)") << "\n"
      << "matrices:    " << matrix_dir() << " (" << shipped_matrices().size() << ")\n"
      << "adapters:    " << adapters_dir() << "\n";
  for (const auto& a : lock_adapters()) {
    std::error_code ec;
    const bool built = cli_fs::exists(adapter_program(a), ec);
    out << "  " << std::left << std::setw(20) << a.name << (built ? "built" : "not built (scripts/build-clients)")
        << "\n";
  }
  out << "servers:     " << servers_dir() << " and this machine's\n";
  for (const auto& e : server_registry()) {
    const auto builds = e.spec->builds(resolve_server_options(*e.spec, nlohmann::json::object()));
    if (builds.empty()) out << "  " << std::left << std::setw(20) << e.name << "none found\n";
    for (const auto& b : builds) {
      out << "  " << std::left << std::setw(20) << (std::string(e.name) + " " + b.version) << b.origin << "\n";
    }
  }
}

struct VersionCommand {
  General g;
  CommandSpec spec() {
    CommandSpec s = command("version", "lockcheck version",
        "version, commit, build type, and the servers and adapters this lockcheck finds",
        "Prints (as lockcheck --version does) lockcheck's version, the commit and build type it was built from, where "
        "it finds its own files (shims, matrices, adapters, server builds) and which servers and lock adapters are "
        "there.");
    s.tables.push_back(general_flags(g, "the same as without it: version writes nothing"));
    return s;
  }
  int execute(const ParsedCommand&, std::ostream& out) {
    print_version(out);
    return kExitValid;
  }
};

struct CompletionCommand {
  General g;
  CommandSpec spec() {
    CommandSpec s = command("completion", "lockcheck completion bash",
        "the bash completion script (installed as /usr/share/bash-completion/completions/lockcheck)",
        "Prints a bash completion script for lockcheck, made from the same tables that parse the flags: source "
        "<(lockcheck completion bash).",
        Positional::kOne, "SHELL");
    s.tables.push_back(general_flags(g, "the same as without it: completion writes nothing"));
    return s;
  }
  int execute(const ParsedCommand& p, std::ostream& out);
};

struct HelpCommand {
  General g;
  bool reference = false;
  CommandSpec spec() {
    CommandSpec s = command("help", "lockcheck help [COMMAND] | lockcheck help --reference",
        "this help; help COMMAND: a command's flags; help --reference: every command as Markdown",
        "Without COMMAND the commands and exit statuses; with COMMAND exactly what lockcheck COMMAND --help prints; "
        "with --reference the whole CLI reference as Markdown (docs/cli.md is made with it).",
        Positional::kOne, "COMMAND");
    s.tables.push_back({"help",
                        {switch_flag("reference", &reference,
                                     "every command and flag as Markdown (build/lockcheck help --reference > "
                                     "docs/cli.md)")},
                        ""});
    s.tables.push_back(general_flags(g, "the same as without it: help writes nothing"));
    return s;
  }
  int execute(const ParsedCommand& p, std::ostream& out, std::ostream& err);
};

std::string exit_status_lines(bool markdown) {
  std::ostringstream s;
  for (const auto& [code, meaning] : exit_status_table()) {
    if (markdown) {
      s << "| " << code << " | " << meaning << " |\n";
    } else {
      s << "  " << std::left << std::setw(7) << code << meaning << "\n";
    }
  }
  return s.str();
}

void print_usage(std::ostream& out) {
  out << "usage: lockcheck COMMAND [FLAGS]\n\ncommands:\n";
  for (const auto& c : command_specs()) {
    out << "  " << std::left << std::setw(12) << c.name << wrap_text(c.summary, 14, 14, 116) << "\n";
  }
  out << "\n`lockcheck COMMAND --help` (or `lockcheck help COMMAND`) describes a command's flags, each with its unit,\n"
         "default and config key; every command takes --dry-run (resolve and print what it would do, start and\n"
         "write nothing). lockcheck --version: version, commit, and the servers and adapters found.\n"
         "\nexit status:\n"
      << exit_status_lines(false);
}

int CompletionCommand::execute(const ParsedCommand& p, std::ostream& out) {
  const std::string shell = one_positional(p, "SHELL is required (bash)");
  if (shell != "bash") throw ConfigError("'" + shell + "' is not a shell it knows (bash)");
  write_bash_completion(command_specs(), out);
  return kExitValid;
}

// Parses args for Cmd; prints its help, or runs body(cmd, parsed).
template <typename Cmd, typename Body>
int run_parsed(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, Body body) {
  Cmd cmd;
  const CommandSpec spec = cmd.spec();
  const ParsedCommand p = parse_command(spec, args, err);
  if (cmd.g.help) {
    print_command_help(spec, out);
    return kExitValid;
  }
  return body(cmd, p);
}

// A command whose body needs only what was parsed and standard output.
template <typename Cmd>
int plain_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_parsed<Cmd>(args, out, err, [&](Cmd& c, const ParsedCommand& p) { return c.execute(p, out); });
}

int help_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_parsed<HelpCommand>(args, out, err,
                                 [&](HelpCommand& c, const ParsedCommand& p) { return c.execute(p, out, err); });
}

// run and boundary record their command line (config.json's argv).
template <typename Cmd>
int recording_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  return run_parsed<Cmd>(args, out, err, [&](Cmd& c, const ParsedCommand& p) { return c.execute(p, args, out); });
}

// The command `name` with args: its body, or its help; nullopt when there is no such command.
std::optional<int> dispatch(const std::string& name, const std::vector<std::string>& args, std::ostream& out,
                            std::ostream& err) {
  using Body = int (*)(const std::vector<std::string>&, std::ostream&, std::ostream&);
  static const std::map<std::string, Body> bodies = {
      {"run", &recording_command<RunCommand>},         {"check", &plain_command<CheckCommand>},
      {"report", &plain_command<ReportCommand>},       {"rerun", &plain_command<RerunCommand>},
      {"reproduce", &plain_command<ReproduceCommand>}, {"boundary", &recording_command<BoundaryCommand>},
      {"test-all", &plain_command<TestAllCommand>},    {"merge", &plain_command<MergeCommand>},
      {"trend", &plain_command<TrendCommand>},         {"export", &plain_command<ExportCommand>},
      {"clean", &plain_command<CleanCommand>},         {"list", &plain_command<ListCommand>},
      {"help", &help_command},                         {"version", &plain_command<VersionCommand>},
      {"completion", &plain_command<CompletionCommand>}};
  const auto it = bodies.find(name);
  if (it == bodies.end()) return std::nullopt;
  return it->second(args, out, err);
}

int HelpCommand::execute(const ParsedCommand& p, std::ostream& out, std::ostream& err) {
  if (reference) {
    if (!p.positionals.empty()) throw ConfigError("give COMMAND or --reference, not both");
    write_reference(command_specs(), exit_status_lines(true), out);
    return kExitValid;
  }
  if (p.positionals.empty()) {
    print_usage(out);
    return kExitValid;
  }
  // Exactly what `lockcheck COMMAND --help` prints.
  const std::string& name = p.positionals.front();
  if (const std::optional<int> code = dispatch(name, {"--help"}, out, err)) return *code;
  throw ConfigError("unknown command '" + name + "' (lockcheck help lists them)");
}

}  // namespace

std::vector<CommandSpec> command_specs() {
  static RunCommand run;
  static CheckCommand check;
  static ReportCommand report;
  static RerunCommand rerun_cmd;
  static ReproduceCommand reproduce_cmd;
  static BoundaryCommand boundary_cmd;
  static TestAllCommand test_all_cmd;
  static MergeCommand merge;
  static TrendCommand trend;
  static ExportCommand export_cmd;
  static CleanCommand clean;
  static ListCommand list;
  static HelpCommand help;
  static VersionCommand version;
  static CompletionCommand completion;
  return {run.spec(),   check.spec(), report.spec(), rerun_cmd.spec(), reproduce_cmd.spec(),
          boundary_cmd.spec(), test_all_cmd.spec(), merge.spec(), trend.spec(), export_cmd.spec(),
          clean.spec(), list.spec(), help.spec(), version.spec(), completion.spec()};
}

RunConfig parse_run_flags(const std::vector<std::string>& args) {
  RunCommand cmd;
  std::ostringstream notes;
  const ParsedCommand p = parse_command(cmd.spec(), args, notes);
  for (const char* refused : {"config", "schedule", "help"}) {
    if (p.has(refused)) throw ConfigError(std::string("--") + refused + ": not here (parse_run_flags)");
  }
  RunConfig c = cmd.c;
  c.nodes_given = p.has("nodes");
  return c;
}

std::optional<CommandFlags> command_flags(const std::string& command) {
  for (const auto& spec : command_specs()) {
    if (spec.name != command) continue;
    CommandFlags f;
    for (const auto& t : spec.tables) {
      for (const auto& flag : t.flags) {
        f.flags.push_back(flag.name);
        if (flag.short_name) f.flags.push_back(std::string(1, flag.short_name));
        if (!flag.old_name.empty()) f.old_names.push_back(flag.old_name);
        if (!flag.note.empty()) f.old_names.push_back(flag.name);  // kept for old scripts
      }
    }
    return f;
  }
  return std::nullopt;
}

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const auto& spec : command_specs()) names.push_back(spec.name);
  return names;
}

int cli_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    print_usage(err);
    return kExitUsage;
  }
  const std::string cmd = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (cmd == "--help" || cmd == "-h") {
      print_usage(out);
      return kExitValid;
    }
    if (cmd == "--version") return *dispatch("version", rest, out, err);
    if (const std::optional<int> code = dispatch(cmd, rest, out, err)) return *code;
    err << "lockcheck: unknown command '" << cmd << "'\n\n";
    print_usage(err);
    return kExitUsage;
  } catch (const boost::program_options::error& e) {
    err << "lockcheck " << cmd << ": " << e.what() << " (see lockcheck " << cmd << " --help)\n";
    return kExitUsage;
  } catch (const ConfigError& e) {
    err << "lockcheck " << cmd << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const ReportError& e) {
    err << "lockcheck " << cmd << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const HistoryError& e) {
    err << "lockcheck " << cmd << ": malformed history: " << e.what() << "\n";
    return kExitUsage;
  } catch (const ClusterError& e) {
    err << "lockcheck " << cmd << ": cluster failed: " << e.what() << "\n";
    return kExitHarness;
  } catch (const std::exception& e) {
    err << "lockcheck " << cmd << ": " << e.what() << "\n";
    return kExitHarness;
  }
}

}  // namespace lockcheck
