// Child processes (redis-server, docker, external lock clients) go through here and nowhere else: argv
// vectors, never `sh -c` strings; every wait is bounded. Built on Boost.Process v1 (Boost 1.74, the Debian
// default: header-only, links Boost.Filesystem). v1 is what the packages give without pinning a newer Boost;
// we use only spawn, pid and wait, which v1 does well, and do signalling with kill(2) ourselves.
//
// Every child started here is registered in a process-wide table until it is reaped, so that an emergency
// teardown (a second SIGINT, a fatal error) can SIGKILL whatever is still running (kill_all_children). Each
// child also gets PR_SET_PDEATHSIG=SIGKILL: if the harness dies by SIGKILL, its Redis nodes die with it.
// Note PDEATHSIG fires when the *thread* that spawned the child exits: spawn long-lived children from
// threads that live as long as the child should (the main thread, the nemesis thread).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace lockcheck {

struct ProcessSpec {
  std::vector<std::string> argv;                  // argv[0] is looked up in PATH unless it contains '/'
  std::map<std::string, std::string> env;         // added to (or replacing in) the harness's environment
  std::string cwd;                                // empty: the harness's
  std::string stdout_path;                        // empty: /dev/null; otherwise appended to
  std::string stderr_path;                        // empty: /dev/null; "=stdout" joins stdout
};

// Thrown when a program cannot be found or started.
class SpawnError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Full path of program as execvp would find it; nullopt when it is not there.
std::optional<std::string> find_program(const std::string& program);

class ChildProcess {
 public:
  // Starts the process. Throws SpawnError (e.g. program not found).
  explicit ChildProcess(const ProcessSpec& spec);
  // SIGKILLs the process if still running and reaps it.
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Sends sig (no-op once reaped).
  void signal(int sig);
  // True until the process has exited (reaps it if it has).
  bool running();
  // Waits at most timeout for exit; returns the exit status (128+signal when killed), nullopt on timeout.
  std::optional<int> wait_for(std::chrono::milliseconds timeout);
  // SIGCONT + SIGKILL, then reap. Idempotent.
  void kill_and_reap();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

struct CommandResult {
  int exit_code = -1;          // 128+signal when killed; -1 when it timed out (and was killed)
  bool timed_out = false;
  std::string out;             // stdout
  std::string err;             // stderr
};

// Runs argv to completion with a bounded time, capturing stdout and stderr (each capped at 1 MiB).
// Throws SpawnError when the program cannot be started.
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::map<std::string, std::string>& env = {});

// SIGCONT then SIGKILL to every child started through ChildProcess that is not yet reaped. Async-signal-safe
// enough for an emergency path (reads a fixed-size table, calls kill(2) only).
void kill_all_children() noexcept;

}  // namespace lockcheck
