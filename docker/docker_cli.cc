#include "docker/docker_cli.h"

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "core/cluster.h"
#include "sys/process.h"

namespace lockcheck {
namespace docker {

static std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string failure_message(const std::vector<std::string>& args, const CommandResult& r) {
  std::vector<std::string> argv = {"docker"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string m = "`" + describe_argv(argv) + "` ";
  if (r.timed_out) {
    m += "did not finish in time (killed)";
  } else {
    m += "failed (exit " + std::to_string(r.exit_code) + ")";
  }
  std::string err = trim(r.err);
  if (!err.empty()) m += ": " + err;
  return m;
}

DockerCli::DockerCli(std::string docker_path) : path_(std::move(docker_path)) {
  if (path_.empty()) path_ = find_program("docker").value_or("");
}

CommandResult DockerCli::run(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                             const std::string& stdin_data) const {
  if (path_.empty()) throw ClusterError("no `docker` program on PATH");
  CommandOptions options;
  options.timeout = timeout;
  options.stdin_data = stdin_data;
  // A Ctrl-C meant for the harness (whose handler then tears the cluster down with more docker calls) must not
  // also abort the docker call in flight.
  options.own_process_group = true;
  std::vector<std::string> argv = {path_};
  argv.insert(argv.end(), args.begin(), args.end());
  static const bool trace = [] {
    const char* v = std::getenv("LOCKCHECK_DOCKER_TRACE");
    return v != nullptr && v[0] != '\0' && std::string(v) != "0";
  }();
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r;
  try {
    r = run_command(argv, options);
  } catch (const std::runtime_error& e) {
    throw ClusterError(e.what());
  }
  if (trace) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    std::fprintf(stderr, "lockcheck: %s -> %s in %lld ms\n", describe_argv(argv).c_str(),
                 r.timed_out ? "timeout" : ("exit " + std::to_string(r.exit_code)).c_str(),
                 static_cast<long long>(ms.count()));
  }
  return r;
}

std::string DockerCli::check(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                             const std::string& stdin_data) const {
  CommandResult r = run(args, timeout, stdin_data);
  if (!r.ok()) throw ClusterError(failure_message(args, r));
  return r.out;
}

std::string DockerCli::require_engine(std::chrono::milliseconds timeout) const {
  const std::vector<std::string> args = {"version", "--format", "{{.Server.Version}}"};
  if (path_.empty()) {
    throw ClusterError("no Docker engine answered: no `docker` program on PATH (tried `docker version`)");
  }
  CommandResult r;
  try {
    r = run(args, timeout);
  } catch (const ClusterError& e) {
    throw ClusterError(std::string("no Docker engine answered: `docker version` could not run: ") + e.what());
  }
  std::string version = trim(r.out);
  if (!r.ok() || version.empty()) {
    std::string why = r.timed_out ? "no answer within " + std::to_string(timeout.count()) + " ms"
                                  : "exit " + std::to_string(r.exit_code);
    std::string err = trim(r.err);
    std::vector<std::string> argv = {path_};
    argv.insert(argv.end(), args.begin(), args.end());
    throw ClusterError("no Docker engine answered: `" + describe_argv(argv) + "` failed (" + why + ")" +
                       (err.empty() ? "" : ": " + err));
  }
  return version;
}

}  // namespace docker
}  // namespace lockcheck
