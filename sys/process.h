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
  // Pipes for programs the harness talks to (external lock clients). With pipe_stdin the child's stdin is a
  // pipe whose write end is ChildProcess::stdin_fd(); with pipe_stdout its stdout is a pipe whose read end is
  // ChildProcess::stdout_fd() (stdout_path is then ignored, and "=stdout" for stderr joins that pipe).
  // The harness's ends are O_CLOEXEC and O_NONBLOCK: other children never inherit them, and reads and writes
  // are bounded with poll(2) by the caller.
  bool pipe_stdin = false;
  bool pipe_stdout = false;
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

  // The harness's ends of the pipes asked for in ProcessSpec (-1 when not asked for). Owned by this object and
  // closed by its destructor (after the child is reaped); close_stdin() closes the write end early (EOF).
  int stdin_fd() const { return stdin_fd_; }
  int stdout_fd() const { return stdout_fd_; }
  void close_stdin();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  pid_t pid_ = -1;
  std::optional<int> status_;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
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

// Splits a command line into argv without a shell: words are separated by blanks (space, tab, newline);
// 'single quotes' keep everything literally; "double quotes" keep everything but \" and \\ (backslash
// escapes); outside quotes a backslash keeps the next character literally. No variables, globs, pipes or
// redirections: `python3 "my client.py" --flag 'a b'` gives {python3, my client.py, --flag, a b}.
// Throws std::invalid_argument on an unterminated quote or a trailing backslash, or when there is no word.
std::vector<std::string> split_command_line(const std::string& line);

// Makes SIGPIPE ignored for the whole process (idempotent, thread-safe): a write to a closed socket or to the
// pipe of a dead child then fails with EPIPE instead of killing the harness. hiredis writes with write(2), so
// anything that talks to Redis nodes that may be killed needs this.
void ignore_sigpipe() noexcept;

// SIGCONT then SIGKILL to every child started through ChildProcess that is not yet reaped. Async-signal-safe
// enough for an emergency path (reads a fixed-size table, calls kill(2) only).
void kill_all_children() noexcept;

}  // namespace lockcheck
