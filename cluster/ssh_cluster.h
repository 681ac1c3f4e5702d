// The `ssh` cluster backend: every Redis node (and Sentinel) runs on a remote host reached with OpenSSH, as in
// Jepsen. Selected with `--cluster ssh --hosts FILE` (cluster/ssh_hosts.h describes the file). Clients run here
// and reach the nodes over the network. scripts/ssh-testbed makes such hosts on one machine.
//
// The backend is the Remote seam's ssh side (cluster/remote.h: a command is `ssh HOST -- ARGV`, a file goes with
// scp) under the one implementation of starting, faulting and tearing down (cluster/remote_cluster.h, which
// describes the remote folders, the faults and the teardown). What this file adds:
//   here     <run_dir>/ssh/ (ssh logs), a control socket folder /tmp/lcssh-<run id>/ (with owner: our pid), one
//            ssh master connection per host (a child process: ControlMaster, every other call multiplexed
//            through it; a master lost to a terminal's Ctrl-C only makes later calls connect anew)
//   per host <work_dir>/lockcheck-<run id>/ (RemoteCluster), the iptables chain LC-<run id>
// Placement: node i on host i % H, port base_port + i / H; Sentinels continue the round after the nodes. With
// --server etcd, member i on host i % H, client port etcd_base_port + 2 * (i / H), peer port the next one up; with
// --server zookeeper, client port zookeeper_base_port + i / H (quorum and election ports from it). Two
// servers on one host cannot be cut from each other: give as many hosts as nodes for exact cuts.
// `lockcheck clean --hosts FILE` removes what runs whose owner process is gone left on the hosts (and their
// control-socket folders here).
//
// Every remote call is `ssh`/`scp` with an argv vector (cluster/ssh_hosts.h quotes it for the remote shell),
// BatchMode, ConnectTimeout and a bounded wait. Thread-safety: RemoteCluster's.
#pragma once

#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cluster/remote_cluster.h"
#include "cluster/ssh_hosts.h"
#include "core/cluster.h"
#include "core/config.h"

namespace lockcheck {

class ChildProcess;

// RemoteClusterOptions (clock_shim, sentinels, sentinel_timings, call_timeout: any one ssh/scp call,
// ready_timeout), plus ssh's own.
struct SshClusterOptions : RemoteClusterOptions {
  std::chrono::seconds connect_timeout{10};  // ssh ConnectTimeout
};

class SshCluster final : public RemoteCluster {
 public:
  // Reads the hosts file config.hosts (ConfigError on a bad one). Nothing is started yet.
  SshCluster(const RunConfig& config, std::string run_dir, SshClusterOptions options = {});
  ~SshCluster() override;  // stop()

  const SshHost& host_of(size_t n) const;

 private:
  SshCluster(const RunConfig& config, std::string run_dir, SshClusterOptions options, std::string run_id);
  void provision() override;             // the master connections, waited for
  void unprovision() noexcept override;  // closes them, removes the control folder

  SshHosts file_;
  std::vector<SshCommands> cmds_;
  std::string control_dir_;
  std::vector<size_t> node_host_;
  std::vector<std::unique_ptr<ChildProcess>> masters_;
  std::chrono::seconds connect_timeout_;
};

// `lockcheck clean --hosts FILE`: on every host, removes what runs whose owner process is gone left behind
// (their nodes, iptables chains, folders); keeps those of live runs. One line per removed or kept thing.
// Returns 0 when nothing it should remove is left, 3 when a host did not answer or a removal failed.
int ssh_clean(const std::string& hosts_file, std::ostream& out);

}  // namespace lockcheck
