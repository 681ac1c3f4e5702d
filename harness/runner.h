// The run loop: config -> cluster -> workload processes (+ nemesis) -> history -> checkers -> results.
// Scoped set-up and teardown nest as in Jepsen's core: whatever happens (error, SIGINT, SIGTERM), workers are
// joined, every fault is undone and every node is stopped before the function returns.
#pragma once

#include <chrono>
#include <optional>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "checkers/checker.h"
#include "core/config.h"
#include "core/op.h"
#include "nemesis/schedule.h"

namespace lockcheck {

// When this environment variable names a file, run_test writes the run folder's path into it (one line) as soon
// as the folder exists: how test-all learns where a child run wrote, without reading its output.
inline constexpr char kRunDirFileEnv[] = "LOCKCHECK_RUN_DIR_FILE";

struct RunOutcome {
  std::string run_dir;  // empty when the run never got a folder
  Validity valid = Validity::kUnknown;
  int exit_code = 3;  // see core/exit_codes.h
};

// Runs one test end to end and writes results/<run-id>/. Prints progress and the verdict to out.
// A cluster or harness failure is reported on out and gives exit code 3; it never throws for those.
// A seed of 0 is replaced by a random one, recorded in config.json.
// replay: a stored fault schedule applied by offset instead of the one the seed plans (`run --schedule FILE`,
// nemesis/schedule.h); its nemeses must be in cfg.nemesis. The run's own schedule.json then holds it.
RunOutcome run_test(RunConfig cfg, std::ostream& out, const Schedule* replay = nullptr);

// Runs the checkers of cfg's workload on h; returns results.json's "valid" and "checkers" fields.
// pairs: pair_index(h) when the caller has it (it is computed here otherwise), shared by every checker.
nlohmann::json check_history(const RunConfig& cfg, const History& h, const std::vector<int64_t>* pairs = nullptr);

// "verdict: V" and a line per checker (name, verdict, summary) of check_history's result or results.json.
void print_checker_lines(std::ostream& out, const nlohmann::json& verdict);

// `lockcheck check RUN_DIR`: re-runs the checkers on a stored history, rewrites results.json (keeping the
// run's other fields) and the report. With write_files false (`--verdict-only`) it only prints the verdict and
// leaves every file as it was. Throws ConfigError / HistoryError on a bad folder.
RunOutcome check_run(const std::string& run_dir, std::ostream& out, std::optional<double> checker_timeout_s,
                     bool write_files = true);

// Reads RUN_DIR/config.json. Throws ConfigError naming the file.
RunConfig read_run_config(const std::string& run_dir);

// How long a run waits, after its time limit (or the first SIGINT/SIGTERM), for its client processes to stop:
// 5 s + nodes x 2 x (connect timeout + op timeout). A run therefore ends within time limit + this bound (+ the
// checkers' own budget). A client still stuck after it is a harness error: the nodes are stopped, the faults
// undone, the history kept, results.json says which processes were stuck, and the process exits with status 3.
std::chrono::milliseconds stop_bound(const RunConfig& cfg);

// Maps a verdict to the exit status.
int exit_code_for(Validity v);

}  // namespace lockcheck
