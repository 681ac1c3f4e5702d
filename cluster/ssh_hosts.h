// The hosts file of the `ssh` cluster backend, and the ssh/scp command lines built from it (pure functions:
// no SSH is run here, so they are unit-tested without hosts).
//
// Hosts file (JSON), e.g. written by scripts/ssh-testbed:
//   {"known_hosts": "/path/known_hosts",              // optional: pin host keys (StrictHostKeyChecking=yes);
//                                                      //   absent: ~/.ssh/known_hosts, new keys accepted once
//    "hosts": [
//      {"name": "h1",                                  // optional, default "h<K>"; letters, digits, '-', '_'
//       "address": "10.213.0.11",                     // required: where ssh and the clients connect
//       "port": 22, "user": "root",                    // optional (22; the local user name)
//       "key": "/path/id_ed25519",                    // required: private key (key-based login only)
//       "work_dir": "/var/tmp/lockcheck",             // required: absolute; each run makes a folder in it
//       "sudo": false,                                 // optional: prefix privileged commands with `sudo -n`
//       "servers": {                                   // optional: per server kind (--server), its programs on
//         "redis": {"programs": {"redis-server": "/usr/bin/redis-server"},   // this host (default: the name on
//                   "ports": {"client": 6379}},                               // its PATH) and its first ports
//         "etcd": {"programs": {"etcd": "/usr/bin/etcd"}, "ports": {"client": 2379, "peer": 2380}}}}]}
// A kind's program names and port labels are its own (`lockcheck list` names them; servers/<kind>.cc). A port
// not given is the kind's usual one. Members are placed round-robin: member i (0-based) on host i % H, round
// r = i / H listening at each port + r * the kind's port stride; Sentinels continue the round after the nodes.
// Network faults act per host, so exact partitions need a host per node (and per Sentinel).
//
// Older hosts files named programs and ports in per-host fields (redis_server, redis_sentinel, base_port, etcd,
// etcd_base_port, java, zookeeper_base_port): they keep working, each read by the kind that names it
// (ServerSpec::legacy_host_programs and legacy_host_ports), and parse_ssh_hosts says once that it is an older
// field and what to write instead.
//
// Remote commands. OpenSSH hands the remote side one command string that the login shell interprets, so each
// argv element is quoted for a POSIX shell (shell_quote) and the elements are joined: the remote shell gets
// back exactly the argv we meant, whatever the paths hold. Nothing from outside is ever spliced unquoted.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockcheck {

// One server kind's settings on a host.
struct SshHostServer {
  std::map<std::string, std::string> programs;  // program name -> its path on the host
  std::map<std::string, int> ports;             // port label -> the first member's port on the host
};

struct SshHost {
  std::string name;
  std::string address;
  int port = 22;
  std::string user;
  std::string key;
  std::string work_dir;
  bool sudo = false;
  std::map<std::string, SshHostServer> servers;  // by kind; the older fields already folded in
};

struct SshHosts {
  std::string path;         // the file it came from
  std::string known_hosts;  // empty: ssh's default, with StrictHostKeyChecking=accept-new
  std::vector<SshHost> hosts;
  // One line per older field used ("hosts[0].base_port: an older field; write \"servers\": {\"redis\": ...}").
  std::vector<std::string> notes;
};

// What the server kinds make of a hosts file: their names, and their older per-host fields.
struct SshHostsSchema {
  struct Kind {
    std::string name;
    std::map<std::string, std::string> legacy_programs;  // field -> program name
    std::vector<std::pair<std::string, std::pair<std::string, int>>> legacy_ports;  // field -> (label, offset)
  };
  std::vector<Kind> kinds;
};

// Parses a hosts file's JSON; `path` names it in messages. Throws ConfigError naming the field, e.g.
// "--hosts FILE: hosts[1].port: must be an integer from 1 to 65535".
SshHosts parse_ssh_hosts(const nlohmann::json& j, const std::string& path, const SshHostsSchema& schema);
// Reads and parses FILE. Throws ConfigError (cannot open, not JSON, bad field).
SshHosts load_ssh_hosts(const std::string& path, const SshHostsSchema& schema);

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
