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
  std::vector<std::string> argv;           // argv[0] is looked up in PATH unless it contains '/'
  std::map<std::string, std::string> env;  // added to (or replacing in) the harness's environment
  std::string cwd;                         // empty: the harness's
  std::string stdout_path;                 // empty: /dev/null; otherwise appended to
  std::string stderr_path;                 // empty: /dev/null; "=stdout" joins stdout
  // Pipes for programs the harness talks to (external lock clients). With pipe_stdin the child's stdin is a
  // pipe whose write end is ChildProcess::stdin_fd(); with pipe_stdout its stdout is a pipe whose read end is
  // ChildProcess::stdout_fd() (stdout_path is then ignored, and "=stdout" for stderr joins that pipe).
  // The harness's ends are O_CLOEXEC and O_NONBLOCK: other children never inherit them, and reads and writes
  // are bounded with poll(2) by the caller.
  bool pipe_stdin = false;
  bool pipe_stdout = false;
  bool pipe_stderr = false;  // stderr is a pipe too, read end ChildProcess::stderr_fd() (stderr_path ignored)
  // A process group of its own: a terminal's Ctrl-C (SIGINT to the foreground group) reaches the harness, whose
  // teardown may still need this child (a docker call in flight), and not the child.
  bool own_process_group = false;
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
  int stderr_fd() const { return stderr_fd_; }
  void close_stdin();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  pid_t pid_ = -1;
  std::optional<int> status_;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
};

// A program run to completion: every shell-out (redis-cli, docker, ssh, ldd) goes through run_command, the one
// spawner, so each gets PDEATHSIG, the child table, close-on-exec of the harness's descriptors and a bound.
struct CommandResult {
  int exit_code = -1;      // the exit status; 128+signal when a signal ended it; -1 when it timed out
  bool timed_out = false;  // the deadline passed and the program was killed (SIGKILL)
  std::string out;         // stdout (each stream capped at 16 MiB)
  std::string err;         // stderr
  bool ok() const { return exit_code == 0 && !timed_out; }
};

struct CommandOptions {
  std::chrono::milliseconds timeout{30000};  // the program is killed when it has not exited by then
  std::map<std::string, std::string> env;    // added to (or replacing in) the harness's environment
  std::string stdin_data;                    // written to its stdin, then closed (empty: stdin is at EOF)
  bool own_process_group = false;            // see ProcessSpec::own_process_group
};

// Runs argv (argv[0] looked up in PATH unless it has a '/') and waits at most options.timeout, reading stdout
// and stderr as they come. Never throws for a failing program: that is in the result. Throws SpawnError when
// the program cannot be started. Thread-safe.
CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options);
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::map<std::string, std::string>& env = {});

// Quotes argv for messages and logs only (never executed): docker run -d --name 'a b'.
std::string describe_argv(const std::vector<std::string>& argv);

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
