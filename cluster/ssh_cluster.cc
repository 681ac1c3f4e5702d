#include "cluster/ssh_cluster.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <boost/filesystem.hpp>

#include "cluster/host_firewall.h"
#include "cluster/remote.h"
#include "core/party.h"
#include "sys/process.h"

namespace lockcheck {

namespace fs = boost::filesystem;
using std::chrono::milliseconds;

namespace {

constexpr int kSentinelBasePort = 26379;

std::string random_id() {
  std::random_device rd;  // names the run's remote objects only
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return buf;
}

std::string hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string program(const std::string& name) {
  auto p = find_program(name);
  if (!p) throw ClusterError("ssh cluster: `" + name + "` not found on PATH (apt-get install openssh-client)");
  return *p;
}

CommandResult run_argv(const std::vector<std::string>& argv, milliseconds timeout, const std::string& input = "") {
  CommandOptions o;
  o.timeout = timeout;
  o.stdin_data = input;
  o.own_process_group = true;  // the teardown's ssh calls must outlive a terminal's Ctrl-C
  std::vector<std::string> resolved = argv;
  resolved[0] = program(argv[0]);
  static const bool trace = [] {
    const char* v = std::getenv("LOCKCHECK_SSH_TRACE");
    return v != nullptr && v[0] != '\0' && std::string(v) != "0";
  }();
  try {
    const auto t0 = std::chrono::steady_clock::now();
    CommandResult r = run_command(resolved, o);
    if (trace) {
      auto ms = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "lockcheck: %s ... %s -> exit %d in %lld ms\n", argv[0].c_str(), argv.back().c_str(),
                   r.exit_code, static_cast<long long>(ms));
    }
    return r;
  } catch (const ClusterError&) {
    throw;
  } catch (const std::exception& e) {
    throw ClusterError(std::string("ssh cluster: cannot run ") + argv[0] + ": " + e.what());
  }
}

// The iptables-restore input that removes chain c and its jumps (the chain is declared first, which flushes it).
std::string remove_chain_rules(const std::string& c) {
  return "*filter\n:" + c + " - [0:0]\n-D INPUT -j " + c + "\n-D OUTPUT -j " + c + "\n-X " + c + "\nCOMMIT\n";
}

// The Remote seam over OpenSSH: a command is `ssh ... DEST -- 'argv'...` through the host's master connection, a
// file goes with scp.
class SshRemote final : public Remote {
 public:
  explicit SshRemote(SshCommands cmds) : cmds_(std::move(cmds)) {}
  std::string where() const override { return "ssh " + cmds_.host().name + " (" + cmds_.host().address + ")"; }
  CommandResult exec(const std::vector<std::string>& argv, const RemoteCall& call) const override {
    return run_argv(cmds_.run(argv, call.privileged), call.timeout, call.input);
  }
  void upload(const std::string& local, const std::string& remote, milliseconds timeout) const override {
    auto argv = cmds_.upload(local, remote);
    argv.insert(argv.begin() + 1, "-r");
    copy(argv, timeout, "to");
  }
  void download(const std::string& remote, const std::string& local, milliseconds timeout) const override {
    copy(cmds_.download(remote, local), timeout, "from");
  }

 private:
  void copy(const std::vector<std::string>& argv, milliseconds timeout, const char* dir) const {
    auto r = run_argv(argv, timeout);
    if (!r.ok()) {
      throw ClusterError("scp " + std::string(dir) + " " + cmds_.host().name + " failed" +
                         (r.timed_out ? " (timed out)" : " (exit " + std::to_string(r.exit_code) + ")") +
                         (remote_trim(r.err).empty() ? "" : ": " + remote_trim(r.err)));
    }
  }
  SshCommands cmds_;
};

}  // namespace

SshCluster::SshCluster(ServerRun server, ClusterSetup setup, SshHosts hosts, SshClusterOptions options)
    : SshCluster(std::move(server), std::move(setup), std::move(hosts), options, random_id()) {}

SshCluster::SshCluster(ServerRun server, ClusterSetup setup, SshHosts hosts, SshClusterOptions options,
                       std::string id)
    : ServerCluster("ssh cluster", server, std::move(setup), id),
      file_(std::move(hosts)),
      connect_timeout_(options.connect_timeout) {
  control_dir_ = "/tmp/lcssh-" + run_id();
  chain_ = "LC-" + id;
  std::vector<RemoteHost> remote_hosts;
  for (size_t h = 0; h < file_.hosts.size(); ++h) {
    const SshHost& sh = file_.hosts[h];
    cmds_.emplace_back(sh, file_.known_hosts, control_dir_ + "/" + std::to_string(h), connect_timeout_);
    RemoteHost host;
    host.remote = std::make_shared<SshRemote>(cmds_.back());
    host.name = sh.name;
    host.address = sh.address;
    host.work_dir = sh.work_dir;
    const auto mine = sh.servers.find(server.name);
    if (mine != sh.servers.end()) host.programs = mine->second.programs;
    remote_hosts.push_back(std::move(host));
  }
  const size_t H = remote_hosts.size();
  const Server& kind = *server.server;
  // Member i on host i % H, round i / H: each port at the host's port for it (the kind's usual one when the hosts
  // file gives none) plus the round times the kind's stride.
  auto placement = [&](size_t i, NodeRole role) {
    Placement p;
    p.host = i % H;
    const int round = static_cast<int>(i / H);
    const auto mine = file_.hosts[p.host].servers.find(server.name);
    for (const auto& port : kind.ports(role)) {
      int base = port.default_port;
      if (role != NodeRole::kSentinel && mine != file_.hosts[p.host].servers.end()) {
        const auto given = mine->second.ports.find(port.label);
        if (given != mine->second.ports.end()) base = given->second;
      }
      p.ports[port.label] = base + round * (role == NodeRole::kSentinel ? 1 : kind.port_stride());
    }
    return p;
  };
  std::vector<Placement> nodes, sentinels;
  for (int i = 0; i < server.nodes; ++i) {
    nodes.push_back(placement(static_cast<size_t>(i), NodeRole::kMaster));
    node_host_.push_back(nodes.back().host);
  }
  // Sentinels after the nodes: hosts of their own when there are enough.
  for (int s = 0; s < kind.sentinels(); ++s) {
    sentinels.push_back(placement(static_cast<size_t>(server.nodes + s), NodeRole::kSentinel));
  }
  auto firewall = std::make_unique<HostFirewall>(backend_, hosts_, [this](const std::string& party) {
    return party_host(party);
  }, chain_, setup_.call_timeout);
  place(std::move(remote_hosts), std::move(firewall), nodes, sentinels);
}

SshCluster::~SshCluster() { stop(); }

const SshHost& SshCluster::host_of(size_t n) const { return file_.hosts[node_host_[n]]; }

// The master connections: children of this thread (PDEATHSIG follows the spawning thread), started one by
// one, then waited for at once.
void SshCluster::provision() {
  fs::create_directories(path("ssh"));
  if (::mkdir(control_dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    throw ClusterError("ssh cluster: cannot create " + control_dir_ + ": " + std::strerror(errno));
  }
  std::ofstream(control_dir_ + "/owner") << ::getpid() << "\n";  // for `lockcheck clean` after a SIGKILL
  std::vector<size_t> used;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    if (host_used(h)) used.push_back(h);
  }
  masters_.resize(hosts_.size());
  for (size_t h : used) {
    ProcessSpec spec;
    spec.argv = cmds_[h].master();
    spec.stdout_path = path("ssh/" + hosts_[h].name + ".ssh.log");
    spec.stderr_path = "=stdout";
    masters_[h] = std::make_unique<ChildProcess>(spec);
  }
  for_each_at_once(used, [this](size_t h) {
    const auto deadline = std::chrono::steady_clock::now() + connect_timeout_ + std::chrono::seconds(5);
    auto check = cmds_[h].master_exit();
    check[check.size() - 2] = "check";
    while (!run_argv(check, std::chrono::seconds(5)).ok()) {
      if (!masters_[h]->running() || std::chrono::steady_clock::now() > deadline || stop_requested_) {
        std::ifstream log(path("ssh/" + hosts_[h].name + ".ssh.log"));
        std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
        throw ClusterError("ssh cluster: cannot connect to " + hosts_[h].name + " (" + cmds_[h].destination() +
                           "): " +
                           (remote_trim(text).empty() ? "no master connection within the connect timeout"
                                                      : remote_trim(text)));
      }
      std::this_thread::sleep_for(milliseconds(50));
    }
  });
}

void SshCluster::unprovision() noexcept {
  for (size_t h = 0; h < masters_.size(); ++h) {
    if (!masters_[h]) continue;
    try {
      run_argv(cmds_[h].master_exit(), std::chrono::seconds(5));
    } catch (const std::exception&) {
    }
    if (!masters_[h]->wait_for(milliseconds(2000))) masters_[h]->kill_and_reap();
    masters_[h].reset();
  }
  boost::system::error_code ec;
  fs::remove_all(control_dir_, ec);
}

// ---------------------------------------------------------------------------------------------------------
// Clean-up of killed runs

int ssh_clean(const SshHosts& file, std::ostream& out) {
  const std::string me = hostname();
  const std::string control_dir = "/tmp/lcssh-clean-" + random_id();
  ::mkdir(control_dir.c_str(), 0700);
  int status = 0;
  for (size_t h = 0; h < file.hosts.size(); ++h) {
    const SshHost& host = file.hosts[h];
    SshCommands cmds(host, file.known_hosts, control_dir + "/" + std::to_string(h));
    auto call = [&](const std::vector<std::string>& argv, bool privileged = false, const std::string& input = "") {
      return run_argv(cmds.run(argv, privileged), std::chrono::seconds(30), input);
    };
    auto r = call({"ls", "-1", "-a", "--", host.work_dir});
    if (!r.ok()) {
      if (r.exit_code == 2 && r.err.find("No such file") != std::string::npos) {
        out << host.name << ": nothing (no " << host.work_dir << ")\n";
      } else {
        out << host.name << ": did not answer: " << remote_trim(r.err) << "\n";
        status = 3;
        continue;
      }
    }
    std::set<std::string> live_ids;
    for (const auto& entry : remote_lines(r.out)) {
      if (entry.rfind("lockcheck-", 0) != 0 || entry.size() != 18) continue;
      const std::string id = entry.substr(10);
      const std::string rdir = host.work_dir + "/" + entry;
      auto owner = call({"cat", "--", rdir + "/owner"});
      std::istringstream in(owner.out);
      long pid = 0;
      std::string owner_host;
      in >> pid >> owner_host;
      if (owner_host == me && pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)) {
        out << "kept " << host.name << ":" << rdir << " (owner pid " << pid << " is alive)\n";
        live_ids.insert(id);
        continue;
      }
      // Its servers: the pid file of each member's folder, if the process there still runs the member's program
      // (its name is in server.program: a pid reused since by another program is left alone).
      auto subs = call({"ls", "-1", "--", rdir});
      for (const auto& sub : remote_lines(subs.out)) {
        auto pidr = call({"sh", "-c", "cat -- \"$1/server.pid\" && cat -- \"$1/server.program\"", "sh",
                          rdir + "/" + sub});
        const std::vector<std::string> lines = remote_lines(pidr.out);
        if (!pidr.ok() || lines.size() != 2) continue;
        const std::string& p = lines[0];
        if (p.empty() || !std::all_of(p.begin(), p.end(), ::isdigit)) continue;
        auto comm = call({"ps", "-o", "comm=", "-p", p});
        const std::string name = remote_trim(comm.out);
        // ps prints at most 15 characters of the program's name.
        if (comm.ok() && !name.empty() && lines[1].substr(0, 15) == name) {
          call({"kill", "-s", "CONT", p});
          call({"kill", "-s", "KILL", p});
          out << "killed " << host.name << ": " << sub << " (pid " << p << ", run " << id << ")\n";
        }
      }
      auto rm = call({"rm", "-rf", "--", rdir});
      if (rm.ok()) {
        out << "removed " << host.name << ":" << rdir << "\n";
      } else {
        out << host.name << ": cannot remove " << rdir << ": " << remote_trim(rm.err) << "\n";
        status = 3;
      }
    }
    // Chains LC-<id> of runs that are not alive.
    auto rules = call({"iptables", "-S"}, true);
    if (rules.ok()) {
      for (const auto& line : remote_lines(rules.out)) {
        if (line.rfind("-N LC-", 0) != 0) continue;
        const std::string c = line.substr(3);
        if (live_ids.count(c.substr(3))) {
          out << "kept " << host.name << ": iptables chain " << c << " (run alive)\n";
          continue;
        }
        auto rr = call({"iptables-restore", "--noflush"}, true, remove_chain_rules(c));
        if (rr.ok()) {
          out << "removed " << host.name << ": iptables chain " << c << "\n";
        } else {
          out << host.name << ": cannot remove iptables chain " << c << ": " << remote_trim(rr.err) << "\n";
          status = 3;
        }
      }
    }
  }
  boost::system::error_code ec;
  fs::remove_all(control_dir, ec);
  // This machine's control-socket folders of runs killed here (their masters died with them).
  for (fs::directory_iterator it("/tmp", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("lcssh-", 0) != 0 || name.rfind("lcssh-clean-", 0) == 0) continue;
    std::ifstream owner((it->path() / "owner").string());
    long pid = 0;
    if (!(owner >> pid) || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM) continue;
    boost::system::error_code rm_ec;
    fs::remove_all(it->path(), rm_ec);
    out << (rm_ec ? "cannot remove " : "removed ") << it->path().string() << " (control sockets of a killed run)\n";
  }
  return status;
}

}  // namespace lockcheck
