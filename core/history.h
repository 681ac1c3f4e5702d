// History on disk: one JSON op per line (history.jsonl). The writer streams each op to the file the moment it
// is recorded (one write(2) per line on an O_APPEND descriptor), so a crash of the harness loses at most the
// ops still in flight. The reader rejects a malformed line with its line number.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/op.h"

namespace lockcheck {

// Thrown by read_history; what() names the file and line.
class HistoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OpCounts {
  int64_t ok = 0, fail = 0, info = 0, invoke = 0;
};

class HistoryWriter {
 public:
  // Creates (truncates) path. Throws std::runtime_error if it cannot be opened.
  // clock: the run's clock; must outlive the writer. May be null when every op passed in has its time set.
  HistoryWriter(const std::string& path, const MonotonicClock* clock);
  ~HistoryWriter();
  HistoryWriter(const HistoryWriter&) = delete;
  HistoryWriter& operator=(const HistoryWriter&) = delete;

  // Assigns index and (when a clock was given) time, appends op to the file, tells the
  // observers, and returns the op as recorded. Thread-safe; ops get indices in the order of their calls.
  Op record(Op op);

  // Everything recorded so far, read back from the file: the writer keeps no copy in memory, so that a long run's
  // memory stays flat (bench/soak.sh; it grew by the ops before). Thread-safe; throws HistoryError as
  // read_history does. For tests and end-of-run reads, not for a loop.
  History snapshot() const;
  // One more than the highest client process id recorded so far (0 when none): a fresh process id. Thread-safe.
  Process next_free_process() const;
  OpCounts counts() const;

  // Called with each op after it is written, under the writer's lock (keep it short, do not call record()).
  void observe(std::function<void(const Op&)> fn);

 private:
  void count(OpType t);

  std::string path_;
  int fd_ = -1;
  const MonotonicClock* clock_;
  // False only for the recording-cost benchmark (environment LOCKCHECK_BENCH_NO_RECORD=1, hidden): ops are
  // indexed, counted and shown to the observers, but neither written nor kept. Never for a real run.
  bool recording_ = true;
  int64_t next_index_ = 0;
  Process next_process_ = 0;
  mutable std::mutex mu_;
  OpCounts counts_;
  std::vector<std::function<void(const Op&)>> observers_;
};

// Reads a history.jsonl (one fast pass, no per-op JSON objects except a non-null "value"). Blank lines are
// skipped; fields may come in any order and unknown fields are ignored. Throws HistoryError("PATH:LINE: reason")
// on a line that is not JSON or not a valid op, on indices that are not 0, 1, 2, ... in order, and on a history
// that breaks the op rules of validate_history. A torn last line (the file does not end in a newline and the
// last line is not valid JSON: the harness crashed mid-write) is not fatal: it is skipped and, when warnings is
// given, a message naming the line is appended to it.
History read_history(const std::string& path, std::vector<std::string>* warnings = nullptr);

// Parses a history from a string of JSON lines (the same rules; name is used in messages).
History parse_history(const std::string& text, const std::string& name = "history",
                      std::vector<std::string>* warnings = nullptr);

// parse_history with the reader's fast paths off: every line parsed by the general JSON path (simdjson's DOM).
// Same rules, same results, same errors: fuzz/history_reader.cc checks that on every input it is given.
History parse_history_general(const std::string& text, const std::string& name,
                              std::vector<std::string>* warnings = nullptr);

// The op rules every history obeys (checked by the readers above while they read, and by the importers):
//  - a completion (ok / fail / info) closes its process's open invoke, of the same f;
//  - a process invokes nothing while it has an open invoke (a client whose op is indeterminate gets a new
//    process id, or completes it as info first);
//  - time never goes backwards within a process;
//  - a client op's f is one the workloads write (is_known_client_f); nemesis ops may have any f;
//  - a loss notice (f "lost", core/op.h) is one op of type info that neither opens nor closes anything.
// Invokes left open at the end are fine (crashed clients). Throws HistoryError("NAME: op N: reason").
void validate_history(const History& h, const std::string& name);

// acquire, release, extend (lock ops); read, add, increment (the set and counter workloads).
bool is_known_client_f(const std::string& f);

}  // namespace lockcheck
