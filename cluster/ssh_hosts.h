// The hosts file of the `ssh` cluster backend, and the ssh/scp command lines built from it (pure functions:
// no SSH is run here, so they are unit-tested without hosts).
//
// Hosts file (JSON), e.g. written by scripts/ssh-testbed:
//   {"known_hosts": "/path/known_hosts",              // optional: pin host keys (StrictHostKeyChecking=yes);
//                                                      //   absent: ~/.ssh/known_hosts, new keys accepted once
//    "hosts": [
//      {"name": "h1",                                  // optional, default "h<K>"; letters, digits, '-', '_'
//       "address": "10.213.0.11",                     // required: where ssh and the Redis clients connect
//       "port": 22, "user": "root",                    // optional (22; the local user name)
//       "key": "/path/id_ed25519",                    // required: private key (key-based login only)
//       "redis_server": "/usr/bin/redis-server",      // optional: redis-server path on the host
//       "redis_sentinel": "/usr/bin/redis-sentinel",  // optional: for the replicated topology
//       "etcd": "/usr/bin/etcd",                      // optional: etcd path on the host (--server etcd)
//       "java": "/usr/bin/java",                      // optional: the JVM of ZooKeeper members (--server
//                                                      //   zookeeper; Debian's zookeeper jars on the host)
//       "work_dir": "/var/tmp/lockcheck",             // required: absolute; each run makes a folder in it
//       "base_port": 6379,                             // optional: first Redis port on the host
//       "etcd_base_port": 2379,                        // optional: first etcd client port (peer: +1)
//       "zookeeper_base_port": 2181,                   // optional: first ZooKeeper client port (quorum
//                                                      //   +707, election +1707: 2888 and 3888 at 2181)
//       "sudo": false}]}                               // optional: prefix privileged commands with `sudo -n`
// Nodes are placed round-robin: node i (0-based) on host i % H, port base_port + i / H; Sentinels continue the
// round after the nodes (Sentinel s on host (nodes + s) % H, port 26379 + (nodes + s) / H). etcd members
// (--server etcd) are placed the same way with two ports each: client etcd_base_port + 2 * (i / H), peer the
// next one up. ZooKeeper members (--server zookeeper) likewise, client port zookeeper_base_port + i / H (quorum
// and election ports from it: cluster/zookeeper_common.h). Network faults act
// per host, so exact partitions need a host per node (and per Sentinel): N hosts >= nodes (+ Sentinels).
//
// Remote commands. OpenSSH hands the remote side one command string that the login shell interprets, so each
// argv element is quoted for a POSIX shell (shell_quote) and the elements are joined: the remote shell gets
// back exactly the argv we meant, whatever the paths hold. Nothing from outside is ever spliced unquoted.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockcheck {

struct SshHost {
  std::string name;
  std::string address;
  int port = 22;
  std::string user;
  std::string key;
  std::string redis_server = "redis-server";
  std::string redis_sentinel = "redis-sentinel";
  std::string etcd = "etcd";
  int etcd_base_port = 2379;
  std::string java = "java";
  int zookeeper_base_port = 2181;
  std::string work_dir;
  int base_port = 6379;
  bool sudo = false;
};

struct SshHosts {
  std::string path;         // the file it came from
  std::string known_hosts;  // empty: ssh's default, with StrictHostKeyChecking=accept-new
  std::vector<SshHost> hosts;
};

// Parses a hosts file's JSON; `path` names it in messages. Throws ConfigError naming the field, e.g.
// "--hosts FILE: hosts[1].port: must be an integer from 1 to 65535".
SshHosts parse_ssh_hosts(const nlohmann::json& j, const std::string& path);
// Reads and parses FILE. Throws ConfigError (cannot open, not JSON, bad field).
SshHosts load_ssh_hosts(const std::string& path);

// 'arg' for a POSIX shell: single quotes, each ' written as '\''. Plain words ([A-Za-z0-9_@%+=:,./-]) as is.
std::string shell_quote(const std::string& arg);
// The remote command string for argv: its elements shell-quoted and joined by spaces.
std::string remote_command(const std::vector<std::string>& argv);

// Builds the ssh and scp command lines for one host, all through one control connection.
class SshCommands {
 public:
  // control_path: the ControlPath socket of this host's master connection (short: a Unix socket path).
  SshCommands(SshHost host, std::string known_hosts, std::string control_path,
              std::chrono::seconds connect_timeout = std::chrono::seconds(10));

  const SshHost& host() const { return host_; }
  std::string destination() const { return host_.user.empty() ? host_.address : host_.user + "@" + host_.address; }

  // ssh options common to every call: key only, BatchMode, ConnectTimeout, keep-alives, host key policy,
  // ControlPath; `master` adds ControlMaster=yes (the long-lived `-N` connection), otherwise ControlMaster=auto
  // (use the master when it is up, else connect directly for that one call).
  std::vector<std::string> options(bool master) const;
  // `ssh ... -N`: the master connection (run as a long-lived child).
  std::vector<std::string> master() const;
  // `ssh -O exit`: asks the master to close.
  std::vector<std::string> master_exit() const;
  // `ssh ... DEST -- 'a' 'b'`: runs argv on the host (prefixed with `sudo -n` when privileged and sudo is set).
  std::vector<std::string> run(const std::vector<std::string>& argv, bool privileged = false) const;
  // `scp ... LOCAL DEST:REMOTE`
  std::vector<std::string> upload(const std::string& local, const std::string& remote) const;
  // `scp ... DEST:REMOTE LOCAL`
  std::vector<std::string> download(const std::string& remote, const std::string& local) const;

 private:
  std::vector<std::string> common(bool scp) const;
  SshHost host_;
  std::string known_hosts_;
  std::string control_path_;
  std::chrono::seconds connect_timeout_;
};

}  // namespace lockcheck
