// The harness side of the power shim (cluster/powershim.c): where the LD_PRELOAD library is, the journal it
// writes, and the replay that turns a journal into what a power loss drops.
//
// A node started with LD_PRELOAD=<power_shim_library()> and LOCKCHECK_POWER_JOURNAL=<file> appends a line to
// <file> after each open-for-write, fsync/fdatasync, rename and before each unlink (the format is in
// powershim.c). After the node is SIGKILLed, replay + plan say what a power loss would have lost, and an executor
// (here: apply_power_loss_here; on remote hosts: cluster/remote_cluster.cc) applies it and empties the journal:
//  - file data: a file's durable length is its size when this incarnation first opened it for writing (or 0 when
//    it created it), moved by every successful fsync/fdatasync to the size the file had just before the call.
//    A file longer than its durable length is truncated to it. Files opened O_SYNC/O_DSYNC keep everything.
//  - names: a file created since the last fsync of its directory is removed (also when it was renamed since,
//    unless the rename replaced another file, whose old content the model does not have).
// Not modelled (said in the report's not_undone where it happened): a rename or unlink that a real power loss
// would undo (its directory was not fsynced after it) stays; an overwrite inside the durable length, ftruncate,
// O_TRUNC of an existing file, mkdir and link are not tracked; sync/syncfs/msync are not seen (Redis calls none
// of them on its data files). The model is that of a file system which persists exactly what was synced
// (like LazyFS); ext4 with data=ordered may persist more.
//
// Thread-safety: the functions keep no state. Errors: ClusterError naming the file and the OS error.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster.h"
#include "core/config.h"

namespace lockcheck {

// Path of the shim library: $LOCKCHECK_POWER_SHIM if set and non-empty, else the one built with this binary
// (CMake target lockcheck_powershim). Does not check that the file exists.
std::string power_shim_library();

// The environment variable through which the shim finds its journal.
constexpr const char* kPowerJournalEnv = "LOCKCHECK_POWER_JOURNAL";
// The journal's name in a node's folder.
constexpr const char* kPowerJournalName = "power.journal";

// Whether the run's nemeses include power-loss (then its nodes start with the power shim).
bool needs_power_shim(const RunConfig& c);

// "a:b" from LD_PRELOAD entries, skipping empty ones.
std::string preload_list(const std::vector<std::string>& libraries);

// Adds the power shim to a node's environment: appended to LD_PRELOAD (beside whatever is there, the clock shim),
// and the journal's path (absolute). REQUIRES: the journal's folder exists.
void add_power_shim_env(std::map<std::string, std::string>& env, const std::string& journal_path);

struct FileStat {
  uint64_t dev = 0;
  uint64_t ino = 0;
  int64_t size = 0;
};

struct PowerLossAction {
  enum class Kind { kTruncate, kRemove };
  Kind kind = Kind::kTruncate;
  std::string path;
  int64_t size = 0;  // now
  int64_t keep = 0;  // the durable length (truncate to it); 0 for a removal
};

// A replayed journal: the files the node wrote in this incarnation and what of them is durable.
class PowerJournal {
 public:
  // Parses the journal's text. A line that does not parse (a torn last line, which the shim's single write
  // makes unlikely) is skipped and counted in malformed().
  static PowerJournal parse(const std::string& text);

  // The paths under scope (a canonical absolute folder; "" everything) whose current state plan() needs.
  std::vector<std::string> paths(const std::string& scope) const;
  // What a power loss drops under scope, given each path's current state (nullopt: no such file). Files outside
  // scope (the node's log, which the harness keeps as evidence) are left alone. Adds to *not_undone what the
  // model leaves that a power loss would undo, and files no longer where the journal last saw them.
  std::vector<PowerLossAction> plan(const std::map<std::string, std::optional<FileStat>>& now,
                                    const std::string& scope, std::vector<std::string>* not_undone) const;
  int64_t records() const { return records_; }
  int64_t malformed() const { return malformed_; }

 private:
  struct Entry {
    std::string path;
    uint64_t dev = 0, ino = 0;
    int64_t durable = 0;        // bytes
    bool always = false;        // O_SYNC/O_DSYNC
    bool name_pending = false;  // created or renamed into its directory since that directory's last fsync
    bool created = false;       // created by this incarnation (C), not just renamed
    bool replaced = false;      // its last rename replaced another file
    bool renamed = false;       // the pending name came from a rename
  };
  std::map<std::pair<uint64_t, uint64_t>, Entry> files_;
  std::vector<std::string> unlinked_pending_;  // unlinks whose directory was not fsynced afterwards
  int64_t records_ = 0;
  int64_t malformed_ = 0;
};

// Replays the journal at journal_path, applies the plan to this machine's files under scope (the node's data
// folder, canonical), empties the journal, and says what was dropped (paths relative to scope). REQUIRES: the
// process that wrote the journal is dead. Throws ClusterError when there is no journal (the shim did not run) or a
// file cannot be truncated or removed.
PowerLossReport apply_power_loss_here(const std::string& journal_path, const std::string& scope);

// The report made from a plan that was applied (paths relative to relative_to when under it).
PowerLossReport power_loss_report(const std::vector<PowerLossAction>& done, std::vector<std::string> not_undone,
                                  int64_t records, const std::string& relative_to);

nlohmann::json to_json(const PowerLossReport& r);

}  // namespace lockcheck
