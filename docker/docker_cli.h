// The `docker` client: every call an argv vector (never a `sh -c` string) through the one spawner
// (sys/process.h), stdout and stderr captured, a bounded wait, in a process group of its own. The engine it
// talks to is whatever that client is configured for (DOCKER_HOST, context).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "sys/process.h"

namespace lockcheck {
namespace docker {

// Every call goes through the one spawner (sys/process.h: run_command, CommandResult).

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
