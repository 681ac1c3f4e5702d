// The Remote seam, as Jepsen's jepsen.control: how a command and a file reach one host, and nothing else. A
// backend implements it (ssh and scp: cluster/ssh_cluster.cc; `docker exec` and `docker cp`:
// docker/docker_cluster.cc); everything above it (starting the servers, cuts, kill/pause/restart, clocks, logs)
// is written once, in cluster/remote_cluster.h.
#pragma once

#include <chrono>
#include <exception>
#include <future>
#include <string>
#include <vector>

#include "sys/process.h"

namespace lockcheck {

struct RemoteCall {
  bool privileged = false;                   // as root (ssh: `sudo -n` when the host asks for it)
  std::string input;                         // written to the command's stdin
  std::chrono::milliseconds timeout{30000};  // the command is killed when it has not finished by then
};

class Remote {
 public:
  virtual ~Remote() = default;
  // The host in messages: "ssh h1 (10.213.0.11)", "docker exec lockcheck-run-n1".
  virtual std::string where() const = 0;
  // Runs argv on the host, as an argv vector (the implementation quotes it for whatever shell it crosses).
  // Never throws for a non-zero exit; throws ClusterError when the transport itself cannot be run.
  virtual CommandResult exec(const std::vector<std::string>& argv, const RemoteCall& call) const = 0;
  // Copies a local file or folder (recursively; a folder lands AS remote, which must not exist yet) to the host,
  // and a remote file here. Throw ClusterError naming the host on failure.
  virtual void upload(const std::string& local, const std::string& remote, std::chrono::milliseconds timeout) const = 0;
  virtual void download(const std::string& remote, const std::string& local,
                        std::chrono::milliseconds timeout) const = 0;
};

// The Remote seam on this machine: exec runs argv here (as the harness's user: privileged calls are not
// elevated), upload and download copy files. A host for RemoteCluster's tests on loopback, without root, Docker
// or sshd (tests/remote_cluster_test.cc).
class LocalRemote final : public Remote {
 public:
  explicit LocalRemote(std::string name = "localhost") : name_(std::move(name)) {}
  std::string where() const override { return "local " + name_; }
  CommandResult exec(const std::vector<std::string>& argv, const RemoteCall& call) const override;
  void upload(const std::string& local, const std::string& remote, std::chrono::milliseconds timeout) const override;
  void download(const std::string& remote, const std::string& local,
                std::chrono::milliseconds timeout) const override;

 private:
  std::string name_;
};

// "ssh h1 (...): `kill -s STOP 12` failed (exit 1): <stderr>" (or "did not finish within N ms").
std::string remote_failure(const Remote& r, const std::vector<std::string>& argv, const RemoteCall& call,
                           const CommandResult& result);
// exec, throwing ClusterError("<prefix>: " + remote_failure) unless it succeeded; returns stdout.
std::string remote_check(const Remote& r, const std::vector<std::string>& argv, const RemoteCall& call,
                         const std::string& prefix);
// exec; false (and *err set to remote_failure) unless it succeeded.
bool remote_try(const Remote& r, const std::vector<std::string>& argv, const RemoteCall& call,
                std::string* err = nullptr);

// White space off both ends; the non-empty trimmed lines of s.
std::string remote_trim(std::string s);
std::vector<std::string> remote_lines(const std::string& s);

// Runs f(x) for every x in xs at once; rethrows the first error after all have finished (so that a teardown
// after it sees everything that was made).
template <typename T, typename F>
void for_each_at_once(const std::vector<T>& xs, F f) {
  std::vector<std::future<void>> runs;
  for (const T& x : xs) runs.push_back(std::async(std::launch::async, [&f, x] { f(x); }));
  std::exception_ptr first;
  for (auto& r : runs) {
    try {
      r.get();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace lockcheck
