// Every shell-out of the docker backend goes through here: a program run with an argv vector (never a
// `sh -c` string), its stdout and stderr captured, and a bounded wait. DockerCli is the `docker` client on
// top of it; the engine it talks to is whatever that client is configured for (DOCKER_HOST, context).
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace lockcheck {
namespace docker {

struct CommandResult {
  int exit_code = -1;       // the program's exit status (a signal's number if one ended it); -1 on timeout
  bool timed_out = false;   // true when the deadline passed and the program was killed (SIGKILL)
  std::string out;          // everything it wrote to stdout
  std::string err;          // everything it wrote to stderr
  bool ok() const { return exit_code == 0 && !timed_out; }
};

struct CommandOptions {
  std::chrono::milliseconds timeout{30000};  // the program is killed when it has not exited by then
  std::string stdin_data;                    // written to its stdin, which is then closed (empty: /dev/null)
};

// Runs `program` (an absolute path) with `args` (argv[1..]) and waits at most options.timeout.
// Never throws for a failing program: that is in the result. Throws std::runtime_error only when the
// program cannot be started at all. Thread-safe (each call has its own pipes and event loop).
// When stdin_data is given, SIGPIPE is set to SIG_IGN for the process (once), so that a program that exits
// without reading its input cannot kill the caller. The program runs in a process group of its own (a
// terminal's Ctrl-C reaches the harness, not the docker call that its teardown may still need) and inherits
// no descriptor but its stdin, stdout and stderr.
CommandResult run_program(const std::string& program, const std::vector<std::string>& args,
                          const CommandOptions& options);

// Quotes argv for messages and logs only (never executed): docker run -d --name 'a b'.
std::string describe_argv(const std::string& program_name, const std::vector<std::string>& args);

// The docker CLI. Copyable, stateless apart from the path of the binary; thread-safe.
class DockerCli {
 public:
  // `docker_path` empty: the first `docker` on PATH (the error is deferred to the first call, so that
  // `available()` can answer false instead of throwing).
  explicit DockerCli(std::string docker_path = "");

  const std::string& path() const { return path_; }  // empty when no docker binary was found

  // `docker <args>`. Never throws for a non-zero exit; throws ClusterError when there is no docker binary.
  // With LOCKCHECK_DOCKER_TRACE=1 in the environment, each call is printed to stderr with its duration.
  CommandResult run(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                    const std::string& stdin_data = "") const;
  // Like run, but throws ClusterError naming the command, its exit status (or timeout) and stderr unless it
  // succeeded; returns stdout.
  std::string check(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                    const std::string& stdin_data = "") const;

  // Throws ClusterError("no Docker engine answered: `docker version` failed: <stderr>") unless the engine
  // answers `docker version` within timeout. Returns the server's version string.
  std::string require_engine(std::chrono::milliseconds timeout = std::chrono::seconds(15)) const;

 private:
  std::string path_;
};

// The message of a failed docker call: "`docker kill x` failed (exit 1): Error: No such container: x".
std::string failure_message(const std::vector<std::string>& args, const CommandResult& r);

}  // namespace docker
}  // namespace lockcheck
