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

#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/process/args.hpp>
#include <boost/process/async_pipe.hpp>
#include <boost/process/child.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/io.hpp>
#include <boost/process/search_path.hpp>

#include "core/cluster.h"

namespace lockcheck {
namespace docker {

namespace bp = boost::process;
namespace asio = boost::asio;

namespace {

// Reads a pipe to EOF into *sink, chunk by chunk, on the caller's io_context.
class PipeDrain : public std::enable_shared_from_this<PipeDrain> {
 public:
  PipeDrain(bp::async_pipe& pipe, std::string* sink) : pipe_(pipe), sink_(sink) {}
  void start() {
    auto self = shared_from_this();
    pipe_.async_read_some(asio::buffer(buf_), [self](const boost::system::error_code& ec, size_t n) {
      self->sink_->append(self->buf_.data(), n);
      if (!ec) self->start();  // EOF or error ends the loop
    });
  }

 private:
  bp::async_pipe& pipe_;
  std::string* sink_;
  std::array<char, 8192> buf_{};
};

}  // namespace

CommandResult run_program(const std::string& program, const std::vector<std::string>& args,
                          const CommandOptions& options) {
  if (!options.stdin_data.empty()) {
    // A program that exits before reading all its input would make our write() raise SIGPIPE, whose default
    // action kills the harness. The harness talks to sockets too (hiredis), where the same holds.
    static std::once_flag ignore_sigpipe;
    std::call_once(ignore_sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  }
  CommandResult result;
  asio::io_context io;
  bp::async_pipe out_pipe(io), err_pipe(io), in_pipe(io);
  std::error_code spawn_ec;
  bp::child child;
  // In the child, between fork and exec (after its pipes are in place as 0, 1, 2): a process group of its
  // own, so that a Ctrl-C meant for the harness (whose handler then tears the cluster down with more docker
  // calls) does not also abort the docker call in flight; and close-on-exec on every other descriptor, so
  // that it does not hold the harness's sockets (a proxied connection the harness closes must look closed to
  // its peer at once). Boost 1.74's limit_handles would do the latter but also closes async pipes.
  auto child_setup = bp::extend::on_exec_setup = [](auto&) {
    ::setpgid(0, 0);
    if (::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
      for (int fd = 3; fd < 4096; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // kernels before 5.11
    }
  };
  if (options.stdin_data.empty()) {
    child = bp::child(bp::exe = program, bp::args = args, bp::std_in < bp::null, bp::std_out > out_pipe,
                      bp::std_err > err_pipe, child_setup, spawn_ec);
  } else {
    child = bp::child(bp::exe = program, bp::args = args, bp::std_in < in_pipe, bp::std_out > out_pipe,
                      bp::std_err > err_pipe, child_setup, spawn_ec);
  }
  if (spawn_ec) throw std::runtime_error("cannot start " + program + ": " + spawn_ec.message());

  std::make_shared<PipeDrain>(out_pipe, &result.out)->start();
  std::make_shared<PipeDrain>(err_pipe, &result.err)->start();
  if (!options.stdin_data.empty()) {
    asio::async_write(in_pipe, asio::buffer(options.stdin_data),
                      [&in_pipe](const boost::system::error_code&, size_t) {
                        boost::system::error_code ignored;
                        in_pipe.close(ignored);
                      });
  }

  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  io.run_until(deadline);  // returns when both pipes reached EOF (the program closed them) or at the deadline

  // The pipes are closed; the program exits at once (or already has). Poll its status up to the deadline.
  std::error_code ec;
  while (child.running(ec) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (child.running(ec)) {
    result.timed_out = true;
    child.terminate(ec);  // SIGKILL, then reaped by terminate()
    return result;
  }
  // running() reaped it; exit_code() is the status it recorded. A signal death reads as non-zero here.
  result.exit_code = child.exit_code();
  if (!io.stopped()) {
    // It exited but a grandchild still holds a pipe: keep what was read, do not wait for more.
    io.stop();
  }
  return result;
}

std::string describe_argv(const std::string& program_name, const std::vector<std::string>& args) {
  std::string s = program_name;
  for (const auto& a : args) {
    s += ' ';
    bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    if (plain) {
      s += a;
    } else {
      s += '\'';
      for (char c : a) s += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      s += '\'';
    }
  }
  return s;
}

static std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string failure_message(const std::vector<std::string>& args, const CommandResult& r) {
  std::string m = "`" + describe_argv("docker", args) + "` ";
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
  if (path_.empty()) {
    boost::filesystem::path p = bp::search_path("docker");
    path_ = p.string();
  }
}

CommandResult DockerCli::run(const std::vector<std::string>& args, std::chrono::milliseconds timeout,
                             const std::string& stdin_data) const {
  if (path_.empty()) throw ClusterError("no `docker` program on PATH");
  CommandOptions options;
  options.timeout = timeout;
  options.stdin_data = stdin_data;
  static const bool trace = [] {
    const char* v = std::getenv("LOCKCHECK_DOCKER_TRACE");
    return v != nullptr && v[0] != '\0' && std::string(v) != "0";
  }();
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r;
  try {
    r = run_program(path_, args, options);
  } catch (const std::runtime_error& e) {
    throw ClusterError(e.what());
  }
  if (trace) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    std::fprintf(stderr, "lockcheck: %s -> %s in %lld ms\n", describe_argv("docker", args).c_str(),
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
    throw ClusterError("no Docker engine answered: `" + describe_argv(path_, args) + "` failed (" + why +
                       ")" + (err.empty() ? "" : ": " + err));
  }
  return version;
}

}  // namespace docker
}  // namespace lockcheck
