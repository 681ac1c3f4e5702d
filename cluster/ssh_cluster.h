// The `ssh` cluster backend: every node (and Sentinel) of any server kind runs on a remote host reached with
// OpenSSH, as in Jepsen. Selected with `--cluster ssh --hosts FILE` (cluster/ssh_hosts.h describes the file).
// Clients run here and reach the nodes over the network. scripts/ssh-testbed makes such hosts on one machine.
//
// The backend is the Remote seam's ssh side (cluster/remote.h: a command is `ssh HOST -- ARGV`, a file goes with
// scp) under the one implementation of starting, faulting and tearing down (cluster/server_cluster.h, which
// describes the remote folders and the faults; the peer network is cluster/host_firewall.h). What this file adds:
//   here     <run_dir>/ssh/ (ssh logs), a control socket folder /tmp/lcssh-<run id>/ (with owner: our pid), one
//            ssh master connection per host (a child process: ControlMaster, every other call multiplexed
//            through it; a master lost to a terminal's Ctrl-C only makes later calls connect anew)
//   per host <work_dir>/lockcheck-<run id>/ (RemoteCluster), the iptables chain LC-<run id>
// Placement: member i on host i % H, round r = i / H, each port at the host's port for the kind (its usual port
// when the hosts file gives none) + r * the kind's stride; Sentinels continue the round after the nodes. Two
// servers on one host cannot be cut from each other: give as many hosts as nodes for exact cuts. A run with
// --server-version ships that build's programs to each host's run folder and runs them there.
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

#include "cluster/server_cluster.h"
#include "cluster/ssh_hosts.h"
#include "core/cluster.h"

namespace lockcheck {

class ChildProcess;

struct SshClusterOptions {
  std::chrono::seconds connect_timeout{10};  // ssh ConnectTimeout
};

class SshCluster final : public ServerCluster {
 public:
  // The run's server on the hosts of a parsed hosts file (its settings for server.name used). setup.call_timeout
  // bounds any one ssh/scp call. Nothing is started yet.
  SshCluster(ServerRun server, ClusterSetup setup, SshHosts hosts, SshClusterOptions options = {});
  ~SshCluster() override;  // stop()

  const SshHost& host_of(size_t n) const;
  const std::string& chain() const { return chain_; }  // the run's iptables chain on each host

 private:
  SshCluster(ServerRun server, ClusterSetup setup, SshHosts hosts, SshClusterOptions options, std::string run_id);
  void provision() override;             // the master connections, waited for
  void unprovision() noexcept override;  // closes them, removes the control folder

  SshHosts file_;
  std::vector<SshCommands> cmds_;
  std::string control_dir_;
  std::string chain_;
  std::vector<size_t> node_host_;
  std::vector<std::unique_ptr<ChildProcess>> masters_;
  std::chrono::seconds connect_timeout_;
};

// `lockcheck clean --hosts FILE`: on every host, removes what runs whose owner process is gone left behind
// (their servers, iptables chains, folders); keeps those of live runs. One line per removed or kept thing.
// Returns 0 when nothing it should remove is left, 3 when a host did not answer or a removal failed.
int ssh_clean(const SshHosts& hosts, std::ostream& out);

}  // namespace lockcheck
