// What a run was and what happened to its clients, in words, for the top of report.html and the console summary
// (harness/runner.cc). Pure functions of what the run recorded: config.json, results.json and the history.
// Every field is read leniently (an older or hand-edited file gives shorter words, never an exception).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/op.h"

namespace lockcheck {
namespace report {

// The client ops of a history as the stats checker counts them (checkers/stats.cc): completions of client
// processes, loss notices not included; nemesis ops apart.
struct ClientTally {
  int64_t ok = 0, fail = 0, info = 0;
  int64_t fail_acquire = 0;  // the fails that were acquires: the lock was held by another process (contention)
  int64_t nemesis = 0;       // nemesis completions (faults applied and healed)
};
ClientTally client_tally(const History& h);

// "61 ok, 3483 fail (acquires that found the lock held: contention, not errors), 2 info (outcome unknown)":
// what each count means for a lock. A fail of another op than acquire is counted apart ("3 other fails").
std::string ops_words(const ClientTally& t);

// One sentence of what was tested, e.g.
//   "redlock on 5 local redis 7.0.15 nodes, 5 clients, kill + restart aimed at the holder (3 faults, 3 s apart),
//    10 s"
// from config.json (lock, client_cmd, cluster, nodes, server, server_version, concurrency, workload, nemesis,
// nemesis_targeting, nemesis_interval_s, time_limit_s), results.json (versions: the version the nodes answered;
// duration_s; server.options.topology) and the history (the faults' start and stop ops, their modes and
// targets). Without a history (h empty) the faults are named as configured.
std::string run_sentence(const nlohmann::json& config, const nlohmann::json& results, const History& h);

// What the workload asked of the lock client, from the config and the ops the clients sent, e.g.
//   "lock workload: acquire, hold 0-800 ms, release; no extend; validity_ms reported on 120 of 120 ok acquires"
std::string workload_words(const nlohmann::json& config, const History& h);

// A client process that ended by itself (an external client that exited or was killed by a signal outside any
// client-crash fault): the info op whose error says so ("external client: exited with status 1").
struct ClientExit {
  Process process = 0;
  int64_t time_ns = 0;
  int64_t index = -1;          // the history index of the op
  std::string why;             // "exited with status 1", "killed by signal 11 (status 139)", "closed its stdout"
  std::optional<int> status;   // the exit status, when the error gave one
};
// The exit op says, or nothing (any other op; a timeout or a malformed answer: the client was alive).
std::optional<ClientExit> client_exit_of(const Op& op);
// Every such exit, in history order (at most one per process: a process is retired after it).
std::vector<ClientExit> client_exits(const History& h);

// The exits as results.json's "client_exits" records them: [{"process": "p3", "time_s", "why", "status",
// "stderr_file": "clients/p3.stderr", "stderr_tail": [...]}]. stderr tails are filled by the caller (I/O);
// stderr_file is where the run's external clients write their stderr. At most `max` (the first ones).
nlohmann::json client_exits_json(const std::vector<ClientExit>& exits, size_t max = 100);

// The lines about client exits for a reader (console and report), from results.json's "client_exits" (and
// "client_exit_count", every exit when the list was cut) and the tally: empty when none exited. First line:
// "3 client processes exited by themselves: p0, p5, p10" or, when no client op got an answer, "every client
// process exited before any lock op completed (3 exits: p0, p5, p10): nothing was tested"; then the first exit (and
// the next that differs) with its status and the last lines of its stderr ("  | ..."). prefix goes before the
// stderr file's path (the run folder and a slash on the console; "" in the report).
std::vector<std::string> client_exit_lines(const nlohmann::json& results, const ClientTally& t,
                                           const std::string& prefix = "");

// The last `max_lines` lines of text (a file's content), without a trailing empty line.
std::vector<std::string> last_lines(const std::string& text, size_t max_lines);

// "800 ms (default)", "10% of the lease, at least 20 ms (default)": a config value of -1 as the run used it.
// effective: the resolved value when one is known; words: the default in words (used when it is not).
std::string default_words(std::optional<int64_t> effective, const std::string& unit, const std::string& words);

}  // namespace report
}  // namespace lockcheck
