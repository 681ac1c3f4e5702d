#include "harness/cli.h"
#include "harness/plan.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <boost/filesystem.hpp>

#include "core/config.h"
#include "core/exit_codes.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

struct CliResult {
  int code;
  std::string out, err;
};

CliResult cli(std::vector<std::string> args) {
  std::ostringstream out, err;
  int code = cli_main(args, out, err);
  return {code, out.str(), err.str()};
}

void expect_usage_error(std::vector<std::string> args, const std::string& needle) {
  CliResult r = cli(args);
  EXPECT_EQ(r.code, kExitUsage) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr: " << r.err;
}

TEST(CliTest, NoCommandOrUnknownCommandIsAUsageError) {
  expect_usage_error({}, "usage: lockcheck");
  expect_usage_error({"frobnicate"}, "unknown command 'frobnicate'");
}

TEST(CliTest, HelpOnEachCommand) {
  for (const auto& cmd : command_names()) {
    CliResult r = cli({cmd, "--help"});
    EXPECT_EQ(r.code, kExitValid) << cmd;
    EXPECT_NE(r.out.find("usage: lockcheck " + cmd), std::string::npos) << r.out;
    // `lockcheck help CMD` prints exactly `lockcheck CMD --help`.
    CliResult h = cli({"help", cmd});
    EXPECT_EQ(h.code, kExitValid) << cmd;
    EXPECT_EQ(h.out, r.out) << cmd;
  }
  const CliResult top = cli({"--help"});
  EXPECT_EQ(top.code, kExitValid);
  EXPECT_EQ(cli({"help"}).out, top.out);
  EXPECT_NE(top.out.find("128+N  interrupted by signal N"), std::string::npos) << top.out;
  expect_usage_error({"help", "frobnicate"}, "lockcheck help: unknown command 'frobnicate'");
}

// boundary takes every run setting but lists them once, by reference (its help was run's twice, 121 lines).
TEST(CliTest, BoundaryHelpDoesNotRepeatRunsFlags) {
  const CliResult r = cli({"boundary", "--help"});
  EXPECT_EQ(r.code, kExitValid);
  EXPECT_EQ(r.out.find("--ttl-ms"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("see lockcheck help run"), std::string::npos) << r.out;
  EXPECT_LT(std::count(r.out.begin(), r.out.end(), '\n'), 45) << r.out;
}

// Every flag whose unit is not seconds names it; every run setting's help says its default and config key.
TEST(CliTest, AFlagWhoseUnitIsNotSecondsNamesIt) {
  for (const auto& spec : command_specs()) {
    for (const auto& t : spec.tables) {
      for (const auto& f : t.flags) {
        if (f.unit.empty() || f.unit == "s") continue;
        // The unit is one of the name's words: --ttl-ms, --hold-ms-max, --budget-min, --drift-ppm.
        EXPECT_NE(("-" + f.name + "-").find("-" + f.unit + "-"), std::string::npos)
            << "lockcheck " << spec.name << " --" << f.name << " is in " << f.unit << " but does not say so";
      }
    }
  }
  const CliResult r = cli({"help", "run"});
  EXPECT_NE(r.out.find("default 80% of the TTL · config key hold_ms_max"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--restart-delay-ms MS"), std::string::npos) << r.out;
}

TEST(CliTest, OldSpellingsStillParseWithANoteNamingTheNewFlag) {
  CliResult r = cli({"run", "--restart-delay", "250", "--dry-run"});
  EXPECT_EQ(r.code, kExitValid) << r.err;
  EXPECT_NE(r.err.find("lockcheck run: note: --restart-delay is now --restart-delay-ms"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("restart_delay_ms"), std::string::npos);
  EXPECT_NE(r.out.find("250 ms"), std::string::npos) << r.out;
  for (const char* cmd : {"reproduce", "boundary"}) {
    r = cli({cmd, "/nonexistent/run", "--budget", "5"});
    EXPECT_NE(r.err.find(std::string("lockcheck ") + cmd + ": note: --budget is now --budget-min"), std::string::npos)
        << r.err;
  }
  expect_usage_error({"run", "--restart-delay", "1", "--restart-delay-ms", "2"},
                     "--restart-delay-ms: given twice (also as --restart-delay)");
  // trend's --out still writes where it did, and says what the output-folder flag is.
  r = cli({"trend", "/nonexistent/night", "--out", "/nonexistent/t"});
  EXPECT_NE(r.err.find("the output-folder flag of every command is --results DIR"), std::string::npos) << r.err;
}

TEST(CliTest, VersionSaysWhatItIsAndWhatItFinds) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--version"}, {"version"}}) {
    const CliResult r = cli(args);
    EXPECT_EQ(r.code, kExitValid) << r.err;
    for (const char* part : {"lockcheck 0.", "commit:", "build:", "clock shim:", "matrices:", "adapters:", "servers:",
                             "redsync", "redis "}) {
      EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
    }
  }
}

// --dry-run resolves as the command would and writes nothing: no results folder, no run.
TEST(CliTest, DryRunStartsAndWritesNothing) {
  TempDir tmp;
  const std::string results = tmp.file("results");
  CliResult r = cli({"run", "--lock", "redlock", "--nemesis", "kill", "--results", results, "--dry-run"});
  EXPECT_EQ(r.code, kExitValid) << r.err;
  for (const char* part : {"plan:", "checkers:  mutex", "nemeses:   kill", "hold_ms_max", "800 ms (80% of the TTL)",
                           "would write: "}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
  r = cli({"test-all", "--matrix", "quick", "--results", results, "--dry-run"});
  EXPECT_EQ(r.code, kExitValid) << r.err;
  EXPECT_NE(r.out.find("single-client-pause: expect invalid"), std::string::npos) << r.out;
  r = cli({"boundary", "--param", "ttl_ms", "--from", "100", "--to", "1000", "--results", results, "--dry-run"});
  EXPECT_EQ(r.code, kExitValid) << r.err;
  for (const auto& cmd : {"list", "clean", "version"}) EXPECT_EQ(cli({cmd, "--dry-run"}).code, kExitValid) << cmd;
  EXPECT_FALSE(std::filesystem::exists(results));
  // A bad flag or an unknown lock fails as the real command would.
  expect_usage_error({"run", "--lock", "nosuch", "--dry-run"}, "--lock: unknown lock algorithm 'nosuch'");
  expect_usage_error({"run", "--ttl-ms", "5", "--dry-run"}, "--ttl-ms");
  expect_usage_error({"test-all", "--matrix", "/nonexistent.json", "--dry-run"}, "cannot open");
  expect_usage_error({"boundary", "--param", "nosuch", "--from", "1", "--to", "2", "--dry-run"}, "--param");
  EXPECT_FALSE(std::filesystem::exists(results));
}

// A flag is its whole name: an abbreviation is an unknown flag, named.
TEST(CliTest, AbbreviatedFlagsAreRefused) {
  expect_usage_error({"run", "--time", "3"}, "--time");
  expect_usage_error({"completion", "zsh"}, "'zsh' is not a shell it knows");
}

// The completion script lists every flag of every command, from the same tables.
TEST(CliTest, CompletionListsEveryFlag) {
  const CliResult r = cli({"completion", "bash"});
  ASSERT_EQ(r.code, kExitValid) << r.err;
  for (const auto& spec : command_specs()) {
    const auto at = r.out.find("\n    " + spec.name + ")\n      flags=\"");
    ASSERT_NE(at, std::string::npos) << spec.name;
    const auto begin = at + spec.name.size() + 20, end = r.out.find('"', begin);
    const std::string flags = " " + r.out.substr(begin, end - begin) + " ";
    for (const auto& t : spec.tables) {
      for (const auto& f : t.flags) {
        EXPECT_NE(flags.find(" --" + f.name + " "), std::string::npos) << spec.name << " --" << f.name;
      }
    }
  }
}

// The reference (docs/cli.md) names every command and flag, with its unit, default and config key.
TEST(CliTest, ReferenceNamesEveryCommandAndFlag) {
  const CliResult r = cli({"help", "--reference"});
  ASSERT_EQ(r.code, kExitValid) << r.err;
  for (const auto& spec : command_specs()) {
    EXPECT_NE(r.out.find("## lockcheck " + spec.name + "\n"), std::string::npos) << spec.name;
  }
  EXPECT_NE(r.out.find("| `--hold-ms-max MS` | ms | 80% of the TTL | `hold_ms_max` |"), std::string::npos);
  EXPECT_NE(r.out.find("| 128+N |"), std::string::npos);
}

TEST(CliTest, UnknownFlagsAndBadValuesNameTheFlag) {
  expect_usage_error({"run", "--frobnicate"}, "--frobnicate");
  expect_usage_error({"run", "--concurrency", "many"}, "--concurrency");
  expect_usage_error({"run", "--concurrency", "0"}, "--concurrency");
  expect_usage_error({"run", "--ttl-ms", "-5"}, "--ttl-ms");
  expect_usage_error({"run", "--time-limit", "0"}, "--time-limit");
  expect_usage_error({"run", "--lock", "nosuchlock"}, "--lock: unknown lock algorithm 'nosuchlock'");
  expect_usage_error({"run", "--workload", "nosuch"}, "--workload");
  expect_usage_error({"run", "--nemesis", "partition,,pause"}, "--nemesis");
  expect_usage_error({"run", "--nemesis", "earthquake"}, "--nemesis: unknown nemesis 'earthquake'");
  expect_usage_error({"run", "--persistence", "sometimes"}, "--persistence");
  expect_usage_error({"run", "--topology", "ring"}, "--topology");
  expect_usage_error({"run", "--cluster", "cloud"}, "--cluster");
  expect_usage_error({"run", "--topology", "cluster", "--nodes", "5"},
                     "--nodes 5 with --topology cluster: Redis Cluster needs at least 6 nodes");
  expect_usage_error({"run", "--nemesis-targeting", "everyone"}, "--nemesis-targeting");
  expect_usage_error({"run", "stray"}, "stray");
  expect_usage_error({"check"}, "RUN_DIR is required");
  expect_usage_error({"check", "/nonexistent/run"}, "config.json");
  expect_usage_error({"list", "--verbose"}, "--verbose");
  expect_usage_error({"export", "--format", "xml", "/tmp"}, "--format");
  expect_usage_error({"export", "--format", "edn"}, "RUN_DIR is required");
  expect_usage_error({"report"}, "RUN_DIR or --index");
  expect_usage_error({"rerun"}, "RUN_DIR is required");
  expect_usage_error({"test-all", "--parallel", "0"}, "--parallel");
  expect_usage_error({"test-all", "--matrix", "/nonexistent.json"}, "cannot open");
  expect_usage_error({"run", "--seeds", "0"}, "--seeds");
  // A fencing workload with a lock whose tokens the harness cannot vouch for: nothing would be checked.
  expect_usage_error({"run", "--workload", "fenced-set", "--lock", "external", "--client-cmd", "true"},
                     "--workload fenced-set: the resource accepts only writes that carry a fencing token");
}

// The config.json of the one run under results.
nlohmann::json only_run_config(const std::string& results) {
  namespace fs = boost::filesystem;
  for (fs::recursive_directory_iterator it(results), end; it != end; ++it) {
    if (it->path().filename() == "config.json" && !fs::is_symlink(it->path().parent_path())) {
      return read_json_file(it->path().string());
    }
  }
  ADD_FAILURE() << "no config.json under " << results;
  return nlohmann::json();
}

// --topology cluster without --nodes: 6 nodes, said in the run's output (the run then stops at the missing
// redis-server, before starting anything).
// Fuzzing (fuzz/flags.cc) found a --lock-opt value of bytes that are not UTF-8: it passed the flag parser and
// threw nlohmann's type_error when the config was written as JSON (exit 3). Every argument is UTF-8 or refused.
TEST(CliTest, FuzzAFlagValueThatIsNotUtf8IsRefusedByPosition) {
  expect_usage_error({"run", "--lock", "redsync", "--lock-opt", "tries=1-l$e\xff\xff"},
                     "run: argument 4 (the value of --lock-opt) is not valid UTF-8");
  expect_usage_error({"trend", "night\xa1"}, "argument 1 is not valid UTF-8");
}

// --topology cluster without --nodes: the redis kind's 6 (the default 5 is too few for 3 masters + 3 replicas), from
// the flags or a config file that does not set nodes; explicit nodes are kept.
TEST(CliTest, ClusterTopologyWithoutNodesUsesSix) {
  Plan p = resolve_plan(parse_run_flags({"--topology", "cluster", "--lock", "cluster"}));
  EXPECT_EQ(p.config.nodes, 6);
  EXPECT_TRUE(p.config.nodes_from_server);
  EXPECT_EQ(nlohmann::json(p.config).at("nodes"), 6);  // rerun replays 6
  RunConfig file;
  from_json({{"topology", "cluster"}, {"lock", "cluster"}, {"time_limit_s", 1}}, file);
  EXPECT_EQ(resolve_plan(file).config.nodes, 6);
  p = resolve_plan(parse_run_flags({"--topology", "cluster", "--lock", "cluster", "--nodes", "7"}));
  EXPECT_EQ(p.config.nodes, 7);
  EXPECT_FALSE(p.config.nodes_from_server);
}

TEST(CliTest, ReproduceAndScheduleFlagsNameTheFlag) {
  expect_usage_error({"reproduce"}, "RUN_DIR is required");
  expect_usage_error({"reproduce", "/nonexistent/run"}, "not a run folder");
  expect_usage_error({"reproduce", "/tmp", "--tries", "0"}, "--tries: must be between 1 and 100");
  expect_usage_error({"reproduce", "/tmp", "--tries", "many"}, "--tries");
  expect_usage_error({"reproduce", "/tmp", "--rate", "11"}, "--rate: must be between 1 and --tries (10)");
  expect_usage_error({"reproduce", "/tmp", "--tries", "3", "--rate", "0"}, "--rate");
  expect_usage_error({"reproduce", "/tmp", "--budget-min", "0"}, "--budget-min");
  expect_usage_error({"reproduce", "/tmp", "--budget-min", "-3"}, "--budget-min");
  expect_usage_error({"reproduce", "/tmp", "--frobnicate"}, "--frobnicate");
  // A folder that is not an INVALID run: nothing to reproduce.
  TempDir files;  // removed with everything in it at the end (the schedule files below too)
  const std::string run = files.file("cli_test_valid_run");
  std::filesystem::create_directories(run);
  std::ofstream(run + "/config.json") << "{}";
  std::ofstream(run + "/history.jsonl") << "";
  std::ofstream(run + "/results.json") << "{\"valid\": \"valid\", \"checkers\": []}";
  expect_usage_error({"reproduce", run}, "the run is valid, not invalid: there is no anomaly to reproduce");
  std::filesystem::remove(run + "/results.json");
  expect_usage_error({"reproduce", run}, "has no results.json");
  std::filesystem::remove_all(run);
  expect_usage_error({"run", "--schedule", "/nonexistent/schedule.json"}, "--schedule: ");
  expect_usage_error({"run", "--schedule", "/nonexistent/schedule.json"}, "cannot open");
  const std::string bad = files.file("cli_test_bad_schedule.json");
  std::ofstream(bad) << "{\"plan\": [{\"at_ms\": -1}]}";
  expect_usage_error({"run", "--schedule", bad}, "plan[0].at_ms");
  std::ofstream(bad, std::ios::trunc) << "not json";
  expect_usage_error({"run", "--schedule", bad}, "--schedule: ");
  const std::string other = files.file("cli_test_kill_schedule.json");
  std::ofstream(other) << "{\"nemesis\": [\"kill\"], \"plan\": []}";
  std::ofstream(bad, std::ios::trunc)
      << "{\"plan\": [{\"at_ms\": 5, \"nemesis\": \"kill\", \"phase\": \"start\", \"f\": \"kill\", "
         "\"duration_ms\": 10}]}";
  expect_usage_error({"run", "--nemesis", "pause", "--schedule", bad},
                     "--schedule: step 0 is a fault of nemesis 'kill', which the run does not have (--nemesis pause)");
  expect_usage_error({"run", "--schedule", other, "--seeds", "3"}, "--schedule: cannot be combined with --seeds");
}

TEST(CliTest, ListNamesTheRegisteredParts) {
  CliResult r = cli({"list"});
  EXPECT_EQ(r.code, kExitValid);
  EXPECT_NE(r.out.find("single"), std::string::npos);
  EXPECT_NE(r.out.find("known defect"), std::string::npos);
  EXPECT_NE(r.out.find("lock "), std::string::npos);
}

// `check RUN_DIR --verdict-only` prints the verdict and writes nothing; plain `check` writes results.json and the
// report.
TEST(CliTest, CheckVerdictOnlyWritesNothing) {
  TempDir tmp;
  const std::string run = tmp.str() + "/run";
  std::filesystem::create_directories(run);
  std::ofstream(run + "/config.json") << R"({"lock":"single","workload":"lock","nemesis":[]})";
  std::ofstream(run + "/history.jsonl")
      << R"({"index":0,"time":1000,"process":0,"type":"invoke","f":"acquire","key":"lock-0","value":null})" "\n"
      << R"({"index":1,"time":2000,"process":0,"type":"ok","f":"acquire","key":"lock-0","value":null,)"
         R"("validity_ms":900})" "\n"
      << R"({"index":2,"time":3000,"process":0,"type":"invoke","f":"release","key":"lock-0","value":null})" "\n"
      << R"({"index":3,"time":4000,"process":0,"type":"ok","f":"release","key":"lock-0","value":null})" "\n";
  CliResult r = cli({"check", run, "--verdict-only"});
  EXPECT_EQ(r.code, kExitValid) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: valid"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mutex"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(run + "/results.json"));
  EXPECT_FALSE(std::filesystem::exists(run + "/report.html"));
  EXPECT_FALSE(std::filesystem::exists(tmp.str() + "/index.html"));
  EXPECT_NE(r.out.find("wrote nothing (--verdict-only)"), std::string::npos) << r.out;
  r = cli({"check", run, "--dry-run"});
  EXPECT_EQ(r.code, kExitValid) << r.out << r.err;
  EXPECT_NE(r.out.find("would write: " + run + "/results.json"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(run + "/results.json"));
  r = cli({"check", run});
  EXPECT_EQ(r.code, kExitValid) << r.out << r.err;
  EXPECT_TRUE(std::filesystem::exists(run + "/results.json"));
  EXPECT_TRUE(std::filesystem::exists(run + "/report.html"));
  EXPECT_NE(r.out.find("rewrote " + run + "/results.json"), std::string::npos) << r.out;
}

// `rerun RUN/repro` takes a minimal reproduction's folder (config.json, schedule.json, tried.json; no history):
// --dry-run resolves it as the run would, to go beside RUN.
TEST(CliTest, RerunTakesAMinimalReproductionsFolder) {
  TempDir tmp;
  const std::string repro = tmp.file("results/run1/repro");
  std::filesystem::create_directories(repro);
  std::ofstream(repro + "/config.json") << R"({"lock":"single","nemesis":["kill"],"seed":3,"time_limit_s":4})";
  std::ofstream(repro + "/schedule.json") << R"({"nemesis":["kill"],"plan":[]})";
  std::ofstream(repro + "/tried.json") << R"({"summary":{"anomaly":{"checker":"mutex","kind":"double-grant"}}})";
  std::ofstream(repro + "/command.txt") << "lockcheck run --config x --schedule y\n";
  const CliResult r = cli({"rerun", repro, "--dry-run"});
  EXPECT_EQ(r.code, kExitValid) << r.err;
  EXPECT_NE(r.out.find("(a minimal reproduction)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the new run goes to " + tmp.file("results") + "/"), std::string::npos) << r.out;
  std::filesystem::remove(repro + "/schedule.json");
  expect_usage_error({"rerun", repro, "--dry-run"}, "has no schedule.json");
}

}  // namespace
}  // namespace lockcheck
