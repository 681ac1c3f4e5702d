// The Remote seam, as Jepsen's jepsen.control: how a command, a file and a server process reach one host, and
// nothing else. A backend implements it (this machine: LocalRemote below; ssh and scp: cluster/ssh_cluster.cc;
// `docker exec` and `docker cp`: docker/docker_cluster.cc); everything above it (starting the servers, cuts,
// kill/pause/restart, clocks, logs) is written once, in cluster/server_cluster.h.
//
// Processes: a server runs in the background on its host. The default implementations are constant shell
// scripts run through exec (setsid, kill, a bounded wait), whatever the transport; LocalRemote starts its servers
// as its own children instead (PR_SET_PDEATHSIG: they die with the harness) and signals them directly.
#pragma once

#include <chrono>
#include <exception>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sys/process.h"

namespace lockcheck {

// A server process to start in the background on a host.
struct ProcessStart {
  std::vector<std::string> argv;              // the program (a PATH name or a path on the host) and its arguments
  std::map<std::string, std::string> env;     // added to its environment
  std::string log;                            // its stdout and stderr are appended here (absolute path)
  std::string pid_file;                       // where its pid is written on the host ("" none)
  std::vector<std::string> remove_first;      // paths removed before it starts (absolute)
};

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

  // Starts p in the background, in a session of its own, and returns its pid. A program the host cannot run
  // fails at once ("PROGRAM: not found on this host"). Throws ClusterError naming the host.
  virtual int start_process(const ProcessStart& p, std::chrono::milliseconds timeout) const;
  // Sends signal sig ("STOP", "CONT") to pid. Throws ClusterError.
  virtual void signal_process(int pid, const std::string& sig, std::chrono::milliseconds timeout) const;
  // SIGCONT and SIGKILL to pid, then waits (at most 10 s) until it is gone or a zombie, so that its ports are
  // free. One already gone is fine. Throws ClusterError when it is still there.
  virtual void kill_process(int pid, std::chrono::milliseconds timeout) const;
  // kill_process for several at once: SIGKILL to each in the order given, then the wait for them all (a cluster's
  // stop: its members die side by side, not one after another). Throws ClusterError when one is still there.
  virtual void kill_processes(const std::vector<int>& pids, std::chrono::milliseconds timeout) const;
  // True while pid runs (a zombie does not). False when it cannot tell; never throws.
  virtual bool process_running(int pid, std::chrono::milliseconds timeout) const;
  // Writes bytes at offset into the existing file path, without truncating it, as one write(2). Throws
  // ClusterError.
  virtual void write_at(const std::string& path, uint64_t offset, const std::string& bytes,
                        std::chrono::milliseconds timeout) const;
};

class ChildProcess;

// The Remote seam on this machine, the local backend's one host: exec runs argv here (as the harness's user:
// privileged calls are not elevated), upload and download copy files, write_at is a pwrite. Servers are children
// of a thread this object owns (sys/process.h: PR_SET_PDEATHSIG fires when the spawning *thread* ends, so they
// live as long as this object, whichever thread asked for them, and die with the harness), signalled with
// kill(2). Thread-safe.
class LocalRemote final : public Remote {
 public:
  explicit LocalRemote(std::string name = "localhost");
  ~LocalRemote() override;  // kills and reaps every server it started
  std::string where() const override { return "local " + name_; }
  CommandResult exec(const std::vector<std::string>& argv, const RemoteCall& call) const override;
  void upload(const std::string& local, const std::string& remote, std::chrono::milliseconds timeout) const override;
  void download(const std::string& remote, const std::string& local,
                std::chrono::milliseconds timeout) const override;
  int start_process(const ProcessStart& p, std::chrono::milliseconds timeout) const override;
  void signal_process(int pid, const std::string& sig, std::chrono::milliseconds timeout) const override;
  void kill_process(int pid, std::chrono::milliseconds timeout) const override;
  void kill_processes(const std::vector<int>& pids, std::chrono::milliseconds timeout) const override;
  bool process_running(int pid, std::chrono::milliseconds timeout) const override;
  void write_at(const std::string& path, uint64_t offset, const std::string& bytes,
                std::chrono::milliseconds timeout) const override;

 private:
  // Runs f on the spawner thread (started on first use) and waits for it.
  void on_spawner(const std::function<void()>& f) const;

  std::string name_;
  mutable std::mutex mu_;
  mutable std::map<int, std::unique_ptr<ChildProcess>> children_;
  struct Spawner;
  mutable std::unique_ptr<Spawner> spawner_;  // guarded by mu_
};

// One host as a cluster sees it: how it is reached and what it can do.
struct RemoteHost {
  std::shared_ptr<const Remote> remote;  // how commands, files and processes reach it
  std::string name;                      // in messages: "h1", "n1", "lo"
  std::string address;                   // where peers and the harness reach its servers (set by provision())
  std::string bind_address = "0.0.0.0";  // where its servers listen ("127.0.0.1" on loopback)
  std::string work_dir;                  // absolute; each run makes <work_dir>/lockcheck-<run id> in it
  bool work_dir_exists = false;          // true: no `mkdir -p` first (a container's image has it)
  // The run's own folder on this machine: the members' folders are <run dir>/nodes/<name>/ and their logs
  // <run dir>/nodes/<name>.log, written in place, kept with the run's results (nothing fetched or removed at
  // stop but what the server kind discards). The local backend's one host.
  bool results_in_place = false;
  // Programs by the name the server kind runs them by ("redis-server", "etcd"): the host's own. A name absent
  // here: the run's build's program (ServerBuild::programs), else the name on the host's PATH.
  std::map<std::string, std::string> programs;
  std::string clock_shim;   // the shim's path on the host; empty: uploaded with the run's folder
  std::string power_shim;   // the power shim's path there (power-loss runs only); empty: uploaded with the folder
  bool can_filter = true;   // iptables rules can be loaded there (root or CAP_NET_ADMIN)
  bool can_delay = true;    // tc netem may be there
  bool ephemeral = false;   // goes away with the run (a container): teardown fetches logs only
  // Its CLOCK_REALTIME is the harness's (a container, this machine): a clock rate is anchored at the harness's
  // time. Else the host's clock is read once (`date +%s%N`) and the difference, measured to within half a
  // round trip, is added.
  bool shares_harness_clock = false;
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
