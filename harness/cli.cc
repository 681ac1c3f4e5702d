#include "harness/cli.h"

#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <boost/algorithm/string.hpp>
#include <boost/program_options.hpp>
#include <simdjson.h>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <optional>

#include "checkers/checker.h"
#include "checkers/export.h"
#include "checkers/import.h"
#include "cluster/ssh_cluster.h"
#include "core/cluster.h"
#include "core/config.h"
#include "core/exit_codes.h"
#include "core/history.h"
#include "core/huge_pages.h"
#include "docker/docker_cluster.h"
#include "harness/matrix.h"
#include "harness/matrix_shard.h"
#include "harness/plan.h"
#include "harness/boundary.h"
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

namespace po = boost::program_options;

namespace lockcheck {

namespace {

const char* kUsage =
    "usage: lockcheck COMMAND [FLAGS]\n"
    "\n"
    "commands:\n"
    "  run             run one test: start the cluster, drive the workload, inject faults, check, report\n"
    "  check RUN_DIR   re-run the checkers on a stored history (--format edn|porcupine FILE: another tool's)\n"
    "  report RUN_DIR  re-render a run's report.html (--index: results/index.html)\n"
    "  rerun RUN_DIR   the stored configuration and seed again\n"
    "  reproduce RUN_DIR  an INVALID run's reproduction rate, then its smallest reliable reproduction (repro/)\n"
    "  boundary  --param NAME --from A --to B RUN FLAGS...  where the verdict flips as one setting moves\n"
    "  test-all        a matrix of configurations with expected verdicts (JUnit XML, HTML summary)\n"
    "  merge DIR...    join the folders of test-all --shard K/N runs into one JUnit, summary and exit status\n"
    "  trend DIR...    what changed over the last nights of test-all folders, told apart from noise\n"
    "  export          write a history as Jepsen EDN ops or Porcupine operations\n"
    "  clean           remove Docker containers, networks and volumes left by killed runs (--hosts: ssh hosts)\n"
    "  list            lock algorithms, workloads, nemeses and checkers, one line each\n"
    "\n"
    "`lockcheck COMMAND --help` describes a command's flags.\n"
    "exit status: 0 valid, 1 anomaly found, 2 usage or config error, 3 harness or cluster failed,\n"
    "             4 a checker could not decide\n";

// `lockcheck run`'s flags: one per field of the config table (core/config.h), plus the flags of the command
// itself. Each field's flag is taken as text and set by the table's parser, so the flag, its help, its
// default and its checks cannot drift from config.json.
po::options_description run_options() {
  po::options_description o("lockcheck run [FLAGS]");
  const nlohmann::json defaults = RunConfig{};
  o.add_options()("help,h", "this help");
  for (const auto& f : config_fields()) {
    if (!*f.flag) continue;
    if (f.kind == ConfigField::Kind::kBool) {
      o.add_options()(f.flag, f.help);
    } else if (f.kind == ConfigField::Kind::kObject) {
      o.add_options()(f.flag, po::value<std::vector<std::string>>()->composing(), f.help);
    } else {
      const nlohmann::json& d = defaults.at(f.key);
      std::string shown = d.is_string() ? d.get<std::string>() : d.dump();
      if (f.kind == ConfigField::Kind::kList) shown = "none";
      auto* v = po::value<std::string>();
      if (!shown.empty()) v->default_value(shown);
      o.add_options()(f.flag, v, f.help);
    }
  }
  // Each server kind's own options (servers/): a flag each, whose value lands in server_opts.
  for (const auto& e : server_registry()) {
    for (const auto& opt : e.spec->options()) {
      const std::string help = std::string(opt.help) + " (--server " + e.name + "; default " +
                               (opt.default_value.is_string() ? opt.default_value.get<std::string>()
                                                              : opt.default_value.dump()) +
                               "; config: server_opts." + opt.key + ")";
      o.add_options()(opt.flag, po::value<std::string>(), help.c_str());
    }
  }
  // clang-format off
  o.add_options()
    ("config", po::value<std::string>(), "run the configuration in FILE (a config.json); only --results, --seed, --schedule, --no-progress may go with it")
    ("schedule", po::value<std::string>(), "replay the fault schedule in FILE (a run's schedule.json) by offset instead of planning one from the seed; without --nemesis its nemeses and targeting are the run's")
    ("seeds", po::value<int>(), "seed search: run N times with seeds SEED, SEED+1, ... and report how many found an anomaly and the median time to the first")
    ("no-progress", "no progress line");
  // clang-format on
  return o;
}

// The config fields given on the command line (not defaulted) into c, and the server kinds' option flags into
// c.server_opts.
void apply_run_flags(const po::variables_map& vm, RunConfig& c) {
  for (const auto& e : server_registry()) {
    for (const auto& opt : e.spec->options()) {
      if (!vm.count(opt.flag)) continue;
      const std::string name = std::string("--") + opt.flag;
      if (c.server_opts.contains(opt.key)) throw ConfigError(name + ": given twice (also as --server-opt)");
      c.server_opts[opt.key] = parse_server_option(opt, vm[opt.flag].as<std::string>(), name);
    }
  }
  for (const auto& f : config_fields()) {
    if (!*f.flag || !vm.count(f.flag)) continue;
    const auto& v = vm[f.flag];
    const std::string name = std::string("--") + f.flag;
    if (f.kind == ConfigField::Kind::kBool) {
      f.parse_flag(c, "true", name);
    } else if (f.kind == ConfigField::Kind::kObject) {
      for (const auto& kv : v.as<std::vector<std::string>>()) f.parse_flag(c, kv, name);
    } else if (!v.defaulted()) {
      f.parse_flag(c, v.as<std::string>(), name);
    }
  }
}

// Parses args against desc with no positional arguments unless positional_name is given (then exactly one).
// Every argument ends up in JSON (config.json, results.json, the report), which is UTF-8: refused here, by
// position, rather than failing as an internal error when it is written.
void require_utf8(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (simdjson::validate_utf8(args[i].data(), args[i].size())) continue;
    throw ConfigError("argument " + std::to_string(i + 1) +
                      (i > 0 && args[i - 1].rfind("--", 0) == 0 && simdjson::validate_utf8(args[i - 1].data(), args[i - 1].size())
                           ? " (the value of " + args[i - 1] + ")"
                           : std::string()) +
                      " is not valid UTF-8");
  }
}

po::variables_map parse(const std::vector<std::string>& args, const po::options_description& desc,
                        const char* positional_name = nullptr, std::string* positional = nullptr) {
  require_utf8(args);
  po::options_description all(desc);
  po::positional_options_description pos;
  if (positional_name) {
    all.add_options()(positional_name, po::value(positional), "");
    pos.add(positional_name, 1);
  }
  std::vector<std::string> extra;
  all.add_options()("lockcheck-extra-args", po::value(&extra), "");
  pos.add("lockcheck-extra-args", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  po::notify(vm);
  if (!extra.empty()) throw ConfigError("unexpected argument '" + extra.front() + "'");
  return vm;
}

// Parses args against desc with any number of positional folders into *dirs (merge, trend).
po::variables_map parse_dirs(const std::vector<std::string>& args, const po::options_description& desc,
                             std::vector<std::string>* dirs) {
  require_utf8(args);
  po::options_description all(desc);
  all.add_options()("dirs", po::value(dirs), "");
  po::positional_options_description pos;
  pos.add("dirs", -1);
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
  po::notify(vm);
  return vm;
}

// --history DIR and --fail-on-trend of test-all and merge (harness/trend.h).
void add_history_options(po::options_description& desc, std::string* history) {
  desc.add_options()("history", po::value(history),
                     "a folder of earlier test-all folders: the summary opens with what changed since the last "
                     "nights (lockcheck trend), trend.html beside it")(
      "fail-on-trend", "with --history: exit 1 also when something got worse since the last nights");
}
bool fail_on_trend_flag(const po::variables_map& vm, const std::string& history) {
  const bool fail = vm.count("fail-on-trend") > 0;
  if (fail && history.empty()) throw ConfigError("--fail-on-trend: needs --history DIR");
  return fail;
}

// `run --schedule FILE`: the stored schedule, read and checked against the run's nemeses (ConfigError naming
// the flag). A run given no --nemesis takes the schedule's nemeses and targeting.
std::optional<Schedule> schedule_flag(const po::variables_map& vm, RunConfig& c) {
  if (!vm.count("schedule")) return std::nullopt;
  const std::string file = vm["schedule"].as<std::string>();
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

}  // namespace

RunConfig parse_run_flags(const std::vector<std::string>& args) {
  RunConfig c;
  auto vm = parse(args, run_options());
  for (const char* refused : {"config", "schedule", "help"}) {
    if (vm.count(refused)) throw ConfigError(std::string("--") + refused + ": not here (parse_run_flags)");
  }
  apply_run_flags(vm, c);
  c.nodes_given = vm.count("nodes") > 0 && !vm["nodes"].defaulted();
  return c;
}

namespace {

int cmd_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  RunConfig c;
  auto desc = run_options();
  auto vm = parse(args, desc);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
  if (vm.count("config")) {
    for (const auto& [name, value] : vm) {
      if (!value.defaulted() && name != "config" && name != "results" && name != "seed" && name != "no-progress" &&
          name != "schedule") {
        throw ConfigError("--" + name + ": cannot be combined with --config (edit the file instead)");
      }
    }
    const std::string file = vm["config"].as<std::string>();
    std::ifstream in(file);
    if (!in) throw ConfigError("--config: cannot open " + file);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw ConfigError("--config: " + file + " is not valid JSON (" + e.what() + ")");
    }
    RunConfig fc;
    from_json(j, fc);
    RunConfig given;
    apply_run_flags(vm, given);
    if (!vm["results"].defaulted()) fc.results_dir = given.results_dir;
    if (!vm["seed"].defaulted()) fc.seed = given.seed;
    fc.progress = vm.count("no-progress") == 0;
    fc.argv = {"lockcheck", "run"};
    fc.argv.insert(fc.argv.end(), args.begin(), args.end());
    const std::optional<Schedule> replay = schedule_flag(vm, fc);
    return run_test(fc, out, replay ? &*replay : nullptr).exit_code;
  }
  apply_run_flags(vm, c);
  c.nodes_given = vm.count("nodes") > 0 && !vm["nodes"].defaulted();
  c.progress = vm.count("no-progress") == 0;
  c.argv = {"lockcheck", "run"};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  if (find_lock_adapter(c.lock) && vm.count("client-cmd")) {
    throw ConfigError("--client-cmd: --lock " + c.lock +
                      " runs its shipped adapter (use --lock external for your own)");
  }
  (void)err;
  const std::optional<Schedule> replay = schedule_flag(vm, c);
  if (vm.count("seeds")) {
    if (replay) throw ConfigError("--schedule: cannot be combined with --seeds");
    return run_seeds(c, vm["seeds"].as<int>(), out);
  }
  return run_test(c, out, replay ? &*replay : nullptr).exit_code;
}

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

int cmd_check(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("lockcheck check RUN_DIR [FLAGS] | lockcheck check --format edn|porcupine FILE");
  double timeout = 0;
  std::string format;
  desc.add_options()("help,h", "this help")("checker-timeout", po::value(&timeout),
                                            "seconds of search before a checker answers unknown (default: the run's)")(
      "format", po::value(&format),
      "check FILE written by another tool: edn (Jepsen/Knossos ops) or porcupine (operations), as `export` writes")(
      "verdict-only",
      "print the verdict and write nothing: RUN_DIR's results.json, report.html and the results index stay as they "
      "were (by default they are rewritten with the new verdict; --format never writes)");
  std::string dir;
  auto vm = parse(args, desc, "run-dir", &dir);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
  std::optional<double> t;
  if (vm.count("checker-timeout")) {
    if (timeout <= 0) throw ConfigError("--checker-timeout: must be > 0 seconds");
    t = timeout;
  }
  set_up_check_heap();
  if (vm.count("format")) {
    if (format != "edn" && format != "porcupine")
      throw ConfigError("--format: '" + format + "' is not one of edn, porcupine");
    if (dir.empty()) throw ConfigError("check --format: FILE is required");
    return check_foreign_file(dir, format, t, out);
  }
  if (dir.empty()) throw ConfigError("check: RUN_DIR is required (a folder under results/)");
  return check_run(dir, out, t, vm.count("verdict-only") == 0).exit_code;
}

int cmd_rerun(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "lockcheck rerun RUN_DIR: the stored configuration and seed again (same fault schedule)");
  desc.add_options()("help,h", "this help");
  std::string dir;
  auto vm = parse(args, desc, "run-dir", &dir);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
  if (dir.empty()) throw ConfigError("rerun: RUN_DIR is required (a folder under results/)");
  return rerun(dir, out);
}

int cmd_reproduce(const std::vector<std::string>& args, std::ostream& out) {
  ReproduceOptions o;
  po::options_description desc(
      "lockcheck reproduce RUN_DIR [FLAGS]: how often an INVALID run's anomaly comes back, then the smallest case "
      "that still shows it (shorter, fewer faults, processes and keys), written to RUN_DIR/repro/");
  // clang-format off
  desc.add_options()
    ("help,h", "this help")
    ("tries", po::value(&o.tries)->default_value(o.tries), "runs per candidate (N)")
    ("rate", po::value(&o.rate)->default_value(o.rate), "a candidate is kept when the anomaly kind comes back in at least R of the N runs")
    ("budget", po::value(&o.budget_min)->default_value(o.budget_min), "minutes for the whole search; it ends at most one run past it, with the best case so far");
  // clang-format on
  std::string dir;
  auto vm = parse(args, desc, "run-dir", &dir);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
  if (dir.empty()) throw ConfigError("reproduce: RUN_DIR is required (an INVALID run's folder under results/)");
  return reproduce(dir, o, out);
}

int cmd_boundary(const std::vector<std::string>& args, std::ostream& out) {
  BoundaryOptions o;
  std::string anomaly, scale = "linear";
  po::options_description own(
      "lockcheck boundary --param NAME --from A --to B [FLAGS] RUN FLAGS...: where a run's verdict flips as one "
      "numeric setting moves (N seeds a probe, bisection between the last safe and the first unsafe value); "
      "writes results/boundary-NAME-TIME/");
  // clang-format off
  own.add_options()
    ("param", po::value(&o.param), "the setting: a config key or run flag (drift_ppm, --pause-ms, ttl_ms), or lock-opt:KEY")
    ("from", po::value(&o.from), "one end of the range")
    ("to", po::value(&o.to), "the other end (either end may be the unsafe one)")
    ("unsafe-at", po::value(&o.unsafe_at)->default_value(o.unsafe_at), "a probe is unsafe at R of N invalid runs or more (0: 9 of 10)")
    ("resolution", po::value(&o.resolution)->default_value(o.resolution), "stop when each edge is bracketed this tightly, in the setting's unit (0: a 32nd of the range)")
    ("budget", po::value(&o.budget_min)->default_value(o.budget_min), "minutes for the whole search (hard: no run starts that could end past it)")
    ("scale", po::value(&scale)->default_value(scale), "linear, or log (geometric midpoints; both ends > 0)")
    ("anomaly", po::value(&anomaly), "CHECKER[:KIND]: count only this anomaly (default: any invalid run)");
  // clang-format on
  po::options_description desc = run_options();
  desc.add(own);
  auto vm = parse(args, desc);
  if (vm.count("help")) {
    out << own << "\n" << desc;
    return kExitValid;
  }
  for (const char* required : {"param", "from", "to"}) {
    if (!vm.count(required)) throw ConfigError(std::string("--") + required + ": required");
  }
  for (const char* refused : {"config", "schedule"}) {
    if (vm.count(refused)) {
      throw ConfigError(std::string("--") + refused + ": not with boundary (each probe runs --seeds seeds of the given flags)");
    }
  }
  if (vm.count("seeds")) o.seeds = vm["seeds"].as<int>();  // runs per probe (N): seed, seed + 1, ... (default 10)
  if (scale != "linear" && scale != "log") throw ConfigError("--scale: '" + scale + "' is not one of linear, log");
  o.log_scale = scale == "log";
  if (vm.count("anomaly")) o.target = parse_anomaly_flag(anomaly);
  RunConfig c;
  apply_run_flags(vm, c);
  c.nodes_given = vm.count("nodes") > 0 && !vm["nodes"].defaulted();
  c.progress = false;
  c.argv = {"lockcheck", "boundary"};
  c.argv.insert(c.argv.end(), args.begin(), args.end());
  return boundary(c, o, out);
}

int cmd_report(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "lockcheck report RUN_DIR | --index [--results DIR]: re-render report.html / results/index.html");
  std::string results_dir = "results";
  desc.add_options()("help,h", "this help")("index", "rewrite the index of every run in the results folder")(
      "results", po::value(&results_dir)->default_value(results_dir), "results folder (with --index)");
  std::string dir;
  auto vm = parse(args, desc, "run-dir", &dir);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
  if (vm.count("index")) {
    if (!dir.empty()) throw ConfigError("report: give RUN_DIR or --index, not both");
    write_index(results_dir);
    out << "index: " << results_dir << "/index.html\n";
    return kExitValid;
  }
  if (dir.empty()) throw ConfigError("report: RUN_DIR or --index is required");
  write_report(dir);
  out << "report: " << dir << "/report.html\n";
  return kExitValid;
}

int cmd_export(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("lockcheck export --format edn|porcupine RUN_DIR [--output FILE]");
  std::string format, output;
  desc.add_options()("help,h", "this help")("format", po::value(&format),
                                            "edn (Jepsen ops for Knossos/Elle) or porcupine")(
      "output,o", po::value(&output), "write here instead of standard output");
  std::string dir;
  auto vm = parse(args, desc, "run-dir", &dir);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
  if (format != "edn" && format != "porcupine")
    throw ConfigError("--format: '" + format + "' is not one of edn, porcupine");
  if (dir.empty()) throw ConfigError("export: RUN_DIR is required (a folder under results/)");
  History h = read_history(dir + "/history.jsonl");
  std::string text = format == "edn" ? export_edn(h) : export_porcupine(h).dump() + "\n";
  if (output.empty()) {
    out << text;
  } else {
    std::ofstream f(output);
    if (!(f << text)) throw std::runtime_error("cannot write " + output);
  }
  return kExitValid;
}

int cmd_clean(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc(
      "lockcheck clean: remove containers, networks and volumes left by runs that were killed");
  std::string hosts;
  desc.add_options()("help,h", "this help")("hosts", po::value(&hosts),
                                            "instead: what killed --cluster ssh runs left on these hosts");
  auto vm = parse(args, desc);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
  if (vm.count("hosts")) return ssh_clean(load_ssh_hosts(hosts, ssh_hosts_schema()), out);
  return docker_clean(out);
}

int cmd_test_all(const std::vector<std::string>& args, std::ostream& out) {
  TestAllOptions o;
  po::options_description desc("lockcheck test-all [FLAGS]: run a matrix of configurations with expected verdicts");
  // clang-format off
  desc.add_options()
    ("help,h", "this help")
    ("matrix", po::value(&o.matrix)->default_value(o.matrix),
     "matrix file, or a shipped one by name (harness/matrix/NAME.json: default, quick, findings, libraries, etcd, "
     "side-by-side, ...)")
    ("junit", po::value(&o.junit_path), "write JUnit XML here (default: in the summary folder)")
    ("parallel", po::value(&o.parallel)->default_value(o.parallel), "runs at a time")
    ("shard", po::value(&o.shard), "K/N: run only share K of N of the runs (then: lockcheck merge)")
    ("results", po::value(&o.results_dir)->default_value(o.results_dir), "results folder");
  // clang-format on
  add_history_options(desc, &o.history);
  auto vm = parse(args, desc);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
  o.fail_on_trend = fail_on_trend_flag(vm, o.history);
  if (!o.history.empty() && !o.shard.empty()) throw ConfigError("--history: a shard judges nothing; give it to merge");
  return test_all(o, out);
}

int cmd_merge(const std::vector<std::string>& args, std::ostream& out) {
  MergeOptions o;
  po::options_description desc("lockcheck merge DIR... [FLAGS]: join test-all shards' folders into one result");
  desc.add_options()("help,h", "this help")("junit", po::value(&o.junit_path),
                                            "write JUnit XML here (default: in the merged folder)")(
      "results", po::value(&o.results_dir)->default_value(o.results_dir), "results folder for the merged folder");
  add_history_options(desc, &o.history);
  auto vm = parse_dirs(args, desc, &o.dirs);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
  o.fail_on_trend = fail_on_trend_flag(vm, o.history);
  return merge_test_all(o, out);
}

int cmd_trend(const std::vector<std::string>& args, std::ostream& out) {
  TrendOptions o;
  po::options_description desc(
      "lockcheck trend DIR... [FLAGS]: what changed over the last nights (test-all folders, or the folders merge "
      "writes; ordered by their own start time). Exit 0 nothing got worse, 1 an expectation newly unmet or an "
      "entry weaker, 2 bad input");
  // clang-format off
  desc.add_options()
    ("help,h", "this help")
    ("out", po::value(&o.out_dir), "write trend.json and trend.html here (default: RESULTS/trend-MATRIX-TIME)")
    ("alpha", po::value(&o.alpha)->default_value(o.alpha, "0.05"), "weaker / stronger when the two-sided Fisher exact test gives p below this")
    ("results", po::value(&o.results_dir)->default_value(o.results_dir), "results folder (for the default --out)");
  // clang-format on
  auto vm = parse_dirs(args, desc, &o.dirs);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
  return trend_command(o, out);
}

int cmd_list(const std::vector<std::string>& args, std::ostream& out) {
  po::options_description desc("lockcheck list");
  desc.add_options()("help,h", "this help");
  auto vm = parse(args, desc);
  if (vm.count("help")) {
    out << desc;
    return kExitValid;
  }
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
  return kExitValid;
}

}  // namespace

int cli_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << kUsage;
    return kExitUsage;
  }
  const std::string cmd = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      out << kUsage;
      return kExitValid;
    }
    if (cmd == "run") return cmd_run(rest, out, err);
    if (cmd == "check") return cmd_check(rest, out);
    if (cmd == "list") return cmd_list(rest, out);
    if (cmd == "rerun") return cmd_rerun(rest, out);
    if (cmd == "reproduce") return cmd_reproduce(rest, out);
    if (cmd == "boundary") return cmd_boundary(rest, out);
    if (cmd == "report") return cmd_report(rest, out);
    if (cmd == "clean") return cmd_clean(rest, out);
    if (cmd == "export") return cmd_export(rest, out);
    if (cmd == "test-all") return cmd_test_all(rest, out);
    if (cmd == "merge") return cmd_merge(rest, out);
    if (cmd == "trend") return cmd_trend(rest, out);
    err << "lockcheck: unknown command '" << cmd << "'\n\n" << kUsage;
    return kExitUsage;
  } catch (const po::error& e) {
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
