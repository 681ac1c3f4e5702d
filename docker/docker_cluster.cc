#include "docker/docker_cluster.h"

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>

#include <boost/filesystem.hpp>

#include "cluster/clock_shim.h"
#include "cluster/host_firewall.h"
#include "cluster/power_loss.h"
#include "cluster/remote.h"
#include "core/party.h"
#include "docker/node_image.h"

namespace lockcheck {

namespace fs = boost::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

constexpr const char* kContainerWorkDir = "/lockcheck";
constexpr auto kQuickTimeout = seconds(20);  // inspect, ls

// Docker names allow [a-zA-Z0-9][a-zA-Z0-9_.-]*; keep the run folder's name readable within that.
std::string sanitise(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a'), ok = true;
    out += ok ? c : '-';
  }
  while (!out.empty() && !((out[0] >= 'a' && out[0] <= 'z') || (out[0] >= '0' && out[0] <= '9'))) out.erase(0, 1);
  if (out.size() > 40) out.resize(40);
  return out.empty() ? "run" : out;
}

std::string random_suffix() {
  std::random_device rd;  // only names the run's objects uniquely; the run's randomness comes from its seed
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", static_cast<unsigned>(rd()));
  return std::string(buf, 6);
}

// The run id: the run folder's name (sanitised) plus a random suffix.
std::string docker_run_id(const std::string& run_dir) {
  fs::path dir(run_dir);
  std::string base = dir.filename().string();
  if (base.empty() || base == ".") base = dir.parent_path().filename().string();
  base = sanitise(base);
  if (base.rfind("lockcheck-", 0) == 0 && base.size() > 10) base = base.substr(10);  // names start with it
  return base + "-" + random_suffix();
}

std::string hostname() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// IPv4 a.b.c.d as a number and back.
bool parse_ipv4(const std::string& s, uint32_t* out) {
  unsigned a, b, c, d;
  char tail;
  if (std::sscanf(s.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4) return false;
  if (a > 255 || b > 255 || c > 255 || d > 255) return false;
  *out = (a << 24) | (b << 16) | (c << 8) | d;
  return true;
}
std::string ipv4_str(uint32_t v) {
  return std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 255) + "." + std::to_string((v >> 8) & 255) + "." +
         std::to_string(v & 255);
}

// The Remote seam inside a container: a command is `docker exec`, a file goes with `docker cp`. Containers run
// as root (with CAP_NET_ADMIN where iptables rules are loaded), so a privileged call is an ordinary one.
class DockerExecRemote final : public Remote {
 public:
  DockerExecRemote(docker::DockerCli cli, std::string container) : cli_(std::move(cli)), c_(std::move(container)) {}
  std::string where() const override { return "docker exec " + c_; }
  CommandResult exec(const std::vector<std::string>& argv, const RemoteCall& call) const override {
    std::vector<std::string> args = {"exec"};
    if (!call.input.empty()) args.push_back("--interactive");
    args.push_back(c_);
    args.insert(args.end(), argv.begin(), argv.end());
    return cli_.run(args, call.timeout, call.input);
  }
  void upload(const std::string& local, const std::string& remote, milliseconds timeout) const override {
    cli_.check({"cp", fs::absolute(local).string(), c_ + ":" + remote}, timeout);
  }
  void download(const std::string& remote, const std::string& local, milliseconds timeout) const override {
    cli_.check({"cp", c_ + ":" + remote, fs::absolute(local).string()}, timeout);
  }

 private:
  const docker::DockerCli cli_;
  const std::string c_;
};

ClusterSetup with_engine_timeout(ClusterSetup setup, const DockerClusterOptions& o) {
  setup.call_timeout = o.engine_timeout;
  return setup;
}

}  // namespace

DockerCluster::DockerCluster(ServerRun server, ClusterSetup setup, DockerClusterOptions options)
    : DockerCluster(std::move(server), setup, std::move(options), docker_run_id(setup.run_dir)) {}

// Host h is node h's container (n1 ...), then the Sentinels' (s1 ...); each runs one member on its kind's usual
// ports.
DockerCluster::DockerCluster(ServerRun server, ClusterSetup setup, DockerClusterOptions options, std::string run_id)
    : ServerCluster("docker cluster", server, with_engine_timeout(std::move(setup), options), run_id),
      docker_options_(std::move(options)),
      cli_(docker_options_.docker_path) {
  if (server.nodes < 1 || server.nodes > 80) throw ClusterError("docker cluster: --nodes must be 1..80");
  network_ = "lockcheck-" + run_id;
  const ImageNeeds needs = server.server->image();
  std::map<std::string, std::string> programs;  // where the image has the kind's programs
  for (const auto& p : needs.programs) programs[p.name] = p.image_path;
  if (!needs.java.empty()) programs["java"] = docker::kImageJava;
  std::vector<RemoteHost> hosts;
  std::vector<Placement> nodes, sentinels;
  const int members = server.nodes + server.server->sentinels();
  for (int h = 0; h < members; ++h) {
    const bool node = h < server.nodes;
    RemoteHost host;
    host.name = node ? Party::node(h).name() : Party::sentinel(h - server.nodes).name();
    host.remote = std::make_shared<DockerExecRemote>(cli_, container_name(host.name));
    host.work_dir = kContainerWorkDir;  // in the image (docker/node_image.cc), so no mkdir
    host.work_dir_exists = true;
    host.programs = programs;
    host.clock_shim = docker::kImageClockShim;
    host.power_shim = docker::kImagePowerShim;
    host.can_filter = node;  // only the nodes' containers have CAP_NET_ADMIN
    host.can_delay = false;  // no tc netem in the image
    host.ephemeral = true;   // removed with the run
    host.shares_harness_clock = true;  // a container reads this machine's CLOCK_REALTIME
    Placement p;
    p.host = static_cast<size_t>(h);
    for (const auto& port : server.server->ports(node ? NodeRole::kMaster : NodeRole::kSentinel)) {
      p.ports[port.label] = port.default_port;
    }
    (node ? nodes : sentinels).push_back(p);
    hosts.push_back(std::move(host));
  }
  auto firewall = std::make_unique<HostFirewall>(backend_, hosts_, [this](const std::string& party) {
    return party_host(party);
  }, "LOCKCHECK", setup_.call_timeout);
  place(std::move(hosts), std::move(firewall), nodes, sentinels);
  set_ready_hint(" (the host must reach container addresses over the bridge, which Docker Desktop's VM does not "
                 "route)");
}

DockerCluster::~DockerCluster() { stop(); }

std::string DockerCluster::container_name(const std::string& node_name) const {
  return "lockcheck-" + run_id() + "-" + node_name;
}

std::vector<std::string> DockerCluster::labels() const {
  return {"--label", std::string(kDockerRunLabel) + "=" + run_id(),
          "--label", std::string(kDockerOwnerPidLabel) + "=" + std::to_string(::getpid()),
          "--label", std::string(kDockerOwnerHostLabel) + "=" + hostname()};
}

// ---------------------------------------------------------------------------------------------------------
// The hosts: engine, image, network, containers

void DockerCluster::provision() {
  cli_.require_engine();
  engine_answered_ = true;

  if (!docker_options_.image.empty()) {
    image_tag_ = docker_options_.image;
    CommandResult have = cli_.run({"image", "inspect", "--format", "{{.Id}}", image_tag_}, kQuickTimeout);
    if (!have.ok()) {
      throw ClusterError("docker cluster: the engine has no image " + image_tag_ + " (nothing is pulled)");
    }
  } else {
    docker::NodeImageInputs inputs;
    inputs.iptables = docker_options_.iptables;
    inputs.clock_shim = setup_.clock_shim_path.empty() ? clock_shim_library() : setup_.clock_shim_path;
    inputs.power_shim = power_shim_library();
    inputs.server = server().image();  // the build the run resolved (--server-version) goes in
    image_tag_ = docker::ensure_node_image(cli_, inputs, docker_options_.build_timeout).tag;
  }
  create_network();
  // `docker run` costs about a second each here (mostly the storage driver); the engine overlaps them well.
  std::vector<size_t> all;
  for (size_t h = 0; h < hosts_.size(); ++h) all.push_back(h);
  for_each_at_once(all, [this](size_t h) { run_container(h); });
}

void DockerCluster::create_network() {
  // Containers need fixed addresses (a restarted node must come back where clients and proxies expect it),
  // and `docker run --ip` works only on a network whose subnet was given explicitly. So: let the engine pick
  // a free subnet (it avoids its other networks and the host's routes), note it, and recreate the network
  // with that subnet pinned. Retried, since another run may take the subnet in between.
  std::string last_error;
  for (int attempt = 0; attempt < 4; ++attempt) {
    std::vector<std::string> create = {"network", "create", "--driver", "bridge"};
    for (const auto& l : labels()) create.push_back(l);
    create.push_back(network_);
    cli_.check(create, docker_options_.engine_timeout);
    std::string ipam;
    try {
      ipam = remote_trim(cli_.check(
          {"network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}} {{.Gateway}};{{end}}", network_},
          kQuickTimeout));
    } catch (...) {
      cli_.run({"network", "rm", network_}, kQuickTimeout);
      throw;
    }
    cli_.check({"network", "rm", network_}, kQuickTimeout);

    std::string subnet, gateway;
    for (const auto& cfg : remote_lines(std::string(ipam.begin(), ipam.end()))) {
      std::istringstream in(cfg.substr(0, cfg.find(';')));
      std::string sn, gw;
      in >> sn >> gw;
      if (sn.find(':') == std::string::npos && !sn.empty()) {  // the IPv4 one
        subnet = sn;
        gateway = gw;
        break;
      }
    }
    auto slash = subnet.find('/');
    uint32_t base = 0;
    int prefix = slash == std::string::npos ? -1 : std::atoi(subnet.c_str() + slash + 1);
    if (prefix < 8 || prefix > 24 || !parse_ipv4(subnet.substr(0, slash), &base)) {
      throw ClusterError("docker cluster: the engine gave network " + network_ + " the subnet '" + subnet +
                         "'; need an IPv4 subnet of /24 or larger");
    }
    base &= prefix == 0 ? 0 : ~((1u << (32 - prefix)) - 1);
    uint32_t gw = 0;
    if (gateway.empty() || !parse_ipv4(gateway, &gw)) gw = base + 1;

    std::vector<std::string> pinned = {"network",  "create", "--driver",  "bridge",
                                       "--subnet", subnet,   "--gateway", ipv4_str(gw)};
    for (const auto& l : labels()) pinned.push_back(l);
    pinned.push_back(network_);
    CommandResult r = cli_.run(pinned, docker_options_.engine_timeout);
    if (!r.ok()) {
      last_error = docker::failure_message(pinned, r);
      continue;
    }
    // n1 at .11, n2 at .12, ...; Sentinels at .101 ...: clear of the gateway (.1).
    const size_t nodes = this->nodes().size();
    for (size_t h = 0; h < hosts_.size(); ++h) {
      hosts_[h].address = ipv4_str(base + static_cast<uint32_t>(h < nodes ? 11 + h : 101 + (h - nodes)));
    }
    return;
  }
  throw ClusterError("docker cluster: cannot create network " + network_ + ": " + last_error);
}


// A host: a container whose first process waits (under the engine's init, which reaps the servers it outlives).
void DockerCluster::run_container(size_t h) {
  const RemoteHost& host = hosts_[h];
  std::vector<std::string> args = {"run",     "--detach",   "--init",        "--name",  container_name(host.name),
                                   "--hostname", host.name, "--network",     network_, "--ip",
                                   host.address, "--network-alias", host.name};
  if (host.can_filter) args.insert(args.end(), {"--cap-add", "NET_ADMIN"});
  for (const auto& l : labels()) args.push_back(l);
  args.insert(args.end(), {"--label", "lockcheck.node=" + host.name, image_tag_, docker::kImageSleep, "infinity"});
  cli_.check(args, docker_options_.engine_timeout);
}

void DockerCluster::unprovision() noexcept {
  if (!engine_answered_) return;  // nothing was made (and there is no engine to ask)
  auto warn = [](const std::string& m) { std::cerr << "lockcheck: docker teardown: " << m << "\n"; };
  auto attempt = [&](const std::vector<std::string>& args, milliseconds timeout) -> std::string {
    try {
      CommandResult r = cli_.run(args, timeout);
      if (!r.ok()) warn(docker::failure_message(args, r));
      return r.out;
    } catch (const std::exception& e) {
      warn(e.what());
      return "";
    }
  };
  const std::string filter = "label=" + std::string(kDockerRunLabel) + "=" + run_id();
  try {
    std::vector<std::string> containers =
        remote_lines(attempt({"ps", "--all", "--quiet", "--filter", filter}, kQuickTimeout));
    if (!containers.empty()) {
      std::vector<std::string> rm = {"rm", "--force", "--volumes"};
      rm.insert(rm.end(), containers.begin(), containers.end());
      attempt(rm, docker_options_.engine_timeout);
    }
    for (const auto& net : remote_lines(attempt({"network", "ls", "--quiet", "--filter", filter}, kQuickTimeout))) {
      attempt({"network", "rm", net}, docker_options_.engine_timeout);
    }
    for (const auto& vol : remote_lines(attempt({"volume", "ls", "--quiet", "--filter", filter}, kQuickTimeout))) {
      attempt({"volume", "rm", "--force", vol}, docker_options_.engine_timeout);
    }
  } catch (const std::exception& e) {
    warn(e.what());
  }
}

// ---------------------------------------------------------------------------------------------------------
// Engine probe and clean-up of killed runs

bool docker_engine_available() {
  try {
    docker::DockerCli cli;
    cli.require_engine(seconds(10));
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

int docker_clean(std::ostream& out) {
  docker::DockerCli cli;
  try {
    cli.require_engine();
  } catch (const ClusterError& e) {
    out << e.what() << "\n";
    return 3;
  }
  const std::string me = hostname();
  const std::string label_filter = std::string("label=") + kDockerRunLabel;
  auto format = [](const std::string& id_field) {
    return "{{." + id_field + "}}\t{{.Label \"" + kDockerRunLabel + "\"}}\t{{.Label \"" + kDockerOwnerPidLabel +
           "\"}}\t{{.Label \"" + kDockerOwnerHostLabel + "\"}}";
  };
  // A run is alive when its owner process runs on this host. Runs of other hosts sharing the engine cannot be
  // checked from here; their owner label says where they came from.
  auto alive = [&me](const std::string& pid_s, const std::string& host) {
    if (host != me || pid_s.empty()) return false;
    pid_t pid = static_cast<pid_t>(std::atoll(pid_s.c_str()));
    if (pid <= 0) return false;
    return ::kill(pid, 0) == 0 || errno == EPERM;
  };
  int status = 0;
  auto sweep = [&](const std::string& kind, std::vector<std::string> ls, std::vector<std::string> rm) {
    CommandResult r = cli.run(ls, seconds(30));
    if (!r.ok()) {
      out << docker::failure_message(ls, r) << "\n";
      status = 3;
      return;
    }
    for (const auto& line : remote_lines(r.out)) {
      std::vector<std::string> f;
      std::istringstream in(line);
      std::string field;
      while (std::getline(in, field, '\t')) f.push_back(field);
      f.resize(4);
      if (f[2].empty()) {  // made by hand (the compose files), not by a run: its owner removes it
        out << "kept " << kind << " " << f[0] << " (run " << f[1] << ": no owner label, not made by lockcheck run)\n";
        continue;
      }
      if (alive(f[2], f[3])) {
        out << "kept " << kind << " " << f[0] << " (run " << f[1] << ", owner pid " << f[2] << " is alive)\n";
        continue;
      }
      // A frozen container would hold its SIGKILL until thawed: thaw it (an error here just means it was not).
      if (kind == "container") cli.run({"unpause", f[0]}, seconds(30));
      std::vector<std::string> args = rm;
      args.push_back(f[0]);
      CommandResult rr = cli.run(args, seconds(60));
      if (rr.ok()) {
        out << "removed " << kind << " " << f[0] << " (run " << f[1] << ")\n";
      } else {
        out << docker::failure_message(args, rr) << "\n";
        status = 3;
      }
    }
  };
  sweep("container", {"ps", "--all", "--filter", label_filter, "--format", format("ID")},
        {"rm", "--force", "--volumes"});
  sweep("network", {"network", "ls", "--filter", label_filter, "--format", format("ID")}, {"network", "rm"});
  sweep("volume", {"volume", "ls", "--filter", label_filter, "--format", format("Name")}, {"volume", "rm", "--force"});
  return status;
}

}  // namespace lockcheck
