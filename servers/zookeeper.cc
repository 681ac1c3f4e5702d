// ZooKeeper (--server zookeeper): every node a member of one ensemble. Debian's zookeeper 3.8.0
// (/usr/share/java/zookeeper.jar) run as `java ... org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg`,
// logging through slf4j-simple to stderr, on this machine's JRE (a docker image gets a copy of it and the jars).
//
// Ports: the client port, and two peer ports: quorum (followers to the leader: proposals, commits, pings, the
// session touches a follower forwards) and election (fast leader election); ZooKeeper's 2181, 2888 and 3888 where a
// member has a host of its own. Each member's zoo.cfg names every member `server.K=host:quorum:election`, its own
// entry with host 0.0.0.0: it binds its two peer ports on every address, and the InitialMessage it sends on an
// election connection then names a wildcard address, which the receiving member ignores (QuorumCnxManager's
// InitialMessage.parse drops wildcards) and connects back to the address *its own* zoo.cfg gives for the sender.
// With a real address there instead, a member with the larger id would connect back to the address the smaller
// one reported, past whatever its own zoo.cfg says (the fault proxy, on loopback). So every peer link goes to the
// address a member's own zoo.cfg gives for its peer. The JVM cannot choose the address it connects from: on
// loopback the proxy tells members apart by /proc.
//
// Sessions: a session's timeout is what the client asks, clamped to [minSessionTimeout, maxSessionTimeout], by
// default [2, 20] x tickTime; zookeeper_timing() chooses tickTime from the run's TTL so that a session timeout of
// --ttl-ms is allowed, and the range is written into zoo.cfg explicitly.
//
// Ready: a member answers `srvr` (whatever it says: one cut off from a quorum answers that it is not serving);
// the ensemble once every member serves and exactly one says leader (one member alone: standalone), within 90 s
// (five JVMs starting on two cores). The leader is the member that says so, when exactly one does.
//
// Abilities: kill, pause, the network, a leader. Not the clock: ZooKeeper times sessions with System.nanoTime
// (CLOCK_MONOTONIC), which the clock shim leaves alone; the shim does move the JVM's wall clock, but measured here
// steps of +60 s and -60 s on every member expired no 2 s session (bench/zookeeper_clock_fault.py). Not power loss:
// the power shim's model of what a power loss drops is written for Redis's files (not tried on a JVM). Not key
// holders: every member holds every node of the tree.
#include "servers/zookeeper.h"

#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <sstream>

#include "cluster/server_cluster.h"
#include "cluster/tcp_probe.h"
#include "core/config.h"
#include "servers/registry.h"
#include "sys/process.h"

namespace lockcheck {

ZooKeeperTiming zookeeper_timing(int64_t ttl_ms) {
  ZooKeeperTiming t;
  t.tick_ms = static_cast<int>(std::min<int64_t>(std::max<int64_t>(ttl_ms / 2, 100), 2000));
  t.min_session_ms = 2 * t.tick_ms;
  t.max_session_ms = 20 * t.tick_ms;
  t.init_limit_ticks = std::max(10, (10000 + t.tick_ms - 1) / t.tick_ms);
  t.sync_limit_ticks = std::max(5, (2500 + t.tick_ms - 1) / t.tick_ms);
  return t;
}

std::string describe(const ZooKeeperTiming& t) {
  return "tickTime " + std::to_string(t.tick_ms) + " ms, sessions " + std::to_string(t.min_session_ms) + "-" +
         std::to_string(t.max_session_ms) + " ms, initLimit " + std::to_string(t.init_limit_ticks) +
         " ticks, syncLimit " + std::to_string(t.sync_limit_ticks) + " ticks";
}

std::optional<ZooKeeperStatus> parse_zookeeper_srvr(const std::string& text) {
  ZooKeeperStatus s;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string version = "Zookeeper version: ", mode = "Mode: ";
    if (line.rfind(version, 0) == 0) {
      const std::string v = line.substr(version.size());
      s.version = v.substr(0, v.find_first_of("-, "));
    } else if (line.rfind(mode, 0) == 0) {
      s.mode = line.substr(mode.size());
    }
  }
  if (s.mode.empty()) return std::nullopt;
  return s;
}

std::vector<std::string> parse_manifest_class_path(const std::string& manifest, const std::string& jar_dir) {
  // Main attributes end at the first empty line; a line starting with one space continues the one before.
  std::string value;
  bool in_class_path = false;
  std::istringstream in(manifest);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) break;
    if (line[0] == ' ') {
      if (in_class_path) value += line.substr(1);
      continue;
    }
    in_class_path = line.rfind("Class-Path:", 0) == 0;
    if (in_class_path) value = line.substr(std::string("Class-Path:").size());
  }
  std::vector<std::string> out;
  std::istringstream words(value);
  std::string w;
  while (words >> w) {
    if (w.rfind("file:", 0) == 0) w = w.substr(5);
    out.push_back(w[0] == '/' ? w : jar_dir + "/" + w);
  }
  return out;
}

namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr int kZooKeeperClientPort = 2181;  // ZooKeeper's defaults
constexpr int kZooKeeperQuorumPort = 2888;
constexpr int kZooKeeperElectionPort = 3888;
constexpr const char* kZooKeeperJar = "/usr/share/java/zookeeper.jar";      // Debian's libzookeeper-java
constexpr const char* kSlf4jSimpleJar = "/usr/share/java/slf4j-simple.jar";  // Debian's libslf4j-java
constexpr const char* kZooKeeperMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
constexpr auto kZooKeeperQueryTimeout = milliseconds(1000);  // one `srvr`

std::string default_classpath() { return std::string(kZooKeeperJar) + ":" + kSlf4jSimpleJar; }

std::optional<ZooKeeperStatus> srvr(const Endpoint& member, milliseconds timeout) {
  const auto text = tcp_exchange(member, "srvr", timeout);
  if (!text) return std::nullopt;
  return parse_zookeeper_srvr(*text);
}

// The jars of a ':'-separated classpath, in order (empty entries dropped).
std::vector<std::string> split_classpath(const std::string& classpath) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= classpath.size();) {
    const size_t end = std::min(classpath.find(':', start), classpath.size());
    if (end > start) out.push_back(classpath.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// META-INF/MANIFEST.MF of each jar ("" for one without), in order: one python3 (zipfile: the manifest is
// deflated) for all of them, the texts separated by NUL bytes.
constexpr const char* kReadManifestsPy =
    "import sys, zipfile\n"
    "for j in sys.argv[1:]:\n"
    "    with zipfile.ZipFile(j) as z:\n"
    "        n = 'META-INF/MANIFEST.MF'\n"
    "        sys.stdout.write((z.read(n).decode('utf-8', 'replace') if n in z.namelist() else '') + '\\0')\n";

std::vector<std::string> jar_manifests(const std::vector<std::string>& jars) {
  if (jars.empty()) return {};
  if (!find_program("python3")) {
    throw ClusterError("cannot read the manifests of ZooKeeper's jars: python3 not found (it reads their "
                       "Class-Path; apt-get install python3)");
  }
  std::vector<std::string> argv = {"python3", "-c", kReadManifestsPy};
  argv.insert(argv.end(), jars.begin(), jars.end());
  const CommandResult r = run_command(argv, std::chrono::seconds(30));
  if (!r.ok()) throw ClusterError("cannot read the manifests of " + jars[0] + " ...: " + r.err);
  std::vector<std::string> out;
  for (size_t start = 0, end; (end = r.out.find('\0', start)) != std::string::npos; start = end + 1) {
    out.push_back(r.out.substr(start, end - start));
  }
  if (out.size() != jars.size()) throw ClusterError("cannot read the manifests of " + jars[0] + " ...: short answer");
  return out;
}

// Every jar a JVM with this classpath may open: the classpath's jars, then, transitively, the jars their manifests'
// Class-Path names that exist here (a jar named there but missing is skipped, as the JVM skips it: Debian's
// zookeeper.jar names jline.jar, which no package here installs). Breadth first, without duplicates. Measured: a
// local member opens exactly zookeeper.jar's Class-Path jars that exist, plus slf4j-simple.jar (/proc/PID/fd).
std::vector<std::string> classpath_jars(const std::string& classpath) {
  std::vector<std::string> out, level = split_classpath(classpath);
  for (const auto& jar : level) {
    if (::access(jar.c_str(), R_OK) != 0) {
      throw ClusterError("ZooKeeper's classpath names " + jar +
                         ", which is not here (--server zookeeper needs Debian's zookeeper package)");
    }
  }
  std::set<std::string> seen;
  for (int depth = 0; depth < 16 && !level.empty(); ++depth) {  // bounded; a manifest cycle ends at `seen` anyway
    std::vector<std::string> fresh;
    for (const auto& jar : level) {
      if (::access(jar.c_str(), R_OK) == 0 && seen.insert(jar).second) fresh.push_back(jar);
    }
    out.insert(out.end(), fresh.begin(), fresh.end());
    const std::vector<std::string> manifests = jar_manifests(fresh);
    level.clear();
    for (size_t i = 0; i < fresh.size(); ++i) {
      const std::string& jar = fresh[i];
      const std::string dir = jar.find('/') == std::string::npos ? "." : jar.substr(0, jar.rfind('/'));
      for (auto& next : parse_manifest_class_path(manifests[i], dir.empty() ? "/" : dir)) level.push_back(next);
    }
  }
  return out;
}

// The version a JVM with this classpath says it runs (org.apache.zookeeper.version.VersionInfoMain: "Apache
// ZooKeeper, version 3.8.0 ..."); "" when java or the jar is missing. Starts a JVM (about 1 s).
std::string jar_version(const std::string& java, const std::string& classpath) {
  if (!find_program(java)) return "";
  CommandResult r;
  try {
    r = run_command({java, "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData", "-cp", classpath,
                     "org.apache.zookeeper.version.VersionInfoMain"},
                    std::chrono::seconds(20));
  } catch (const std::exception&) {
    return "";
  }
  const std::string marker = "version ";
  const auto pos = r.out.find(marker);
  if (!r.ok() || pos == std::string::npos) return "";
  const auto start = pos + marker.size();
  const auto end = r.out.find_first_of(" \t\r\n-", start);
  return r.out.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

class ZooKeeperServer final : public Server {
 public:
  explicit ZooKeeperServer(const ServerSetup& s)
      : timing_(zookeeper_timing(s.ttl_ms)), ttl_ms_(s.ttl_ms), classpath_(default_classpath()) {}

  std::vector<ServerPort> ports(NodeRole) const override {
    return {{"client", kZooKeeperClientPort, false},
            {"quorum", kZooKeeperQuorumPort, true},
            {"election", kZooKeeperElectionPort, true}};
  }

  // zoo.cfg (every peer at the address its peers reach it; its own entry 0.0.0.0: see the header comment) and myid.
  std::vector<std::pair<std::string, std::string>> files(const MemberContext& m) const override {
    const int id = static_cast<int>(m.index()) + 1;
    const Endpoint& client = m.listen.at("client");
    std::ostringstream o;
    o << "# written by lockcheck (servers/zookeeper.cc)\n"
      << "tickTime=" << timing_.tick_ms << "\ninitLimit=" << timing_.init_limit_ticks
      << "\nsyncLimit=" << timing_.sync_limit_ticks << "\nminSessionTimeout=" << timing_.min_session_ms
      << "\nmaxSessionTimeout=" << timing_.max_session_ms << "\ndataDir=" << m.dir << "/data"
      << "\nclientPort=" << client.port << "\nclientPortAddress=" << client.host
      << "\nadmin.enableServer=false\n4lw.commands.whitelist=srvr,ruok,mntr,stat\nreconfigEnabled=false\n"
      // Several members of a run may share a host (ssh): no autopurge thread, no JMX port; the harness removes data.
      << "autopurge.purgeInterval=0\n";
    for (size_t k = 0; k < m.members.size(); ++k) {
      const MemberAddress& peer = m.members[k];
      if (peer.name == m.self.name) {
        o << "server." << k + 1 << "=0.0.0.0:" << m.listen.at("quorum").port << ":" << m.listen.at("election").port
          << "\n";
      } else {
        o << "server." << k + 1 << "=" << peer.at("quorum").host << ":" << peer.at("quorum").port << ":"
          << peer.at("election").port << "\n";
      }
    }
    return {{"zoo.cfg", o.str()}, {"data/myid", std::to_string(id) + "\n"}};
  }

  // Small heaps (five JVMs on two cores): -Xms32m -Xmx128m, the serial GC, C1 only (faster start), no hsperfdata
  // file in /tmp (a SIGKILLed JVM would leave it behind), IPv4 sockets only (the proxy's classifier reads
  // /proc/net/tcp).
  Launch launch(const MemberContext& m) const override {
    return {{m.program("java"), "-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true", "-Dorg.slf4j.simpleLogger.showDateTime=true",
             "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ", "-cp", classpath_, kZooKeeperMain,
             m.dir + "/zoo.cfg"},
            {}};
  }
  std::vector<std::string> discard_at_stop() const override { return {"data"}; }

  // The JVM is up and its four-letter words work: any answer to `srvr` (a member without a quorum answers that it
  // is not serving; a restarted member may be cut off from its peers). The ensemble's readiness is after_start's.
  std::string ready_error(const MemberAddress& m) const override {
    return tcp_exchange(m.admin, "srvr", kZooKeeperQueryTimeout) ? "" : "its client port does not answer srvr";
  }
  void after_start(const std::vector<MemberAddress>& members, milliseconds timeout, const std::string& hint,
                   const std::function<bool()>& stopping) const override {
    const std::string why = wait_until_ready([&] { return ready(members); }, timeout, stopping,
                                             "ZooKeeper: stopping (while waiting for a leader)");
    if (why.empty()) return;
    throw ClusterError("the ZooKeeper ensemble was not ready within " + std::to_string(timeout.count()) + " ms (" +
                       why + "; " + describe(timing_) + "); " + hint);
  }
  milliseconds start_timeout() const override { return milliseconds(90000); }

  // The running member that says `Mode: leader` when exactly one does (a leader cut off from its followers keeps
  // saying so for up to syncLimit ticks).
  std::optional<size_t> leader(const std::vector<std::optional<MemberAddress>>& nodes) const override {
    std::optional<size_t> leader;
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (!nodes[n]) continue;
      const auto s = srvr(nodes[n]->admin, kZooKeeperQueryTimeout);
      if (!s || (s->mode != "leader" && s->mode != "standalone")) continue;
      if (leader) return std::nullopt;  // two say so (an old leader not yet stepped down): unknown
      leader = n;
    }
    return leader;
  }

  std::vector<std::string> node_versions(const std::vector<MemberAddress>& nodes) const override {
    std::vector<std::string> versions(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (const auto s = srvr(nodes[i].admin, kZooKeeperQueryTimeout)) versions[i] = s->version;
    }
    return versions;
  }

  json settings() const override {
    return {{"tick_ms", timing_.tick_ms},
            {"min_session_timeout_ms", timing_.min_session_ms},
            {"max_session_timeout_ms", timing_.max_session_ms},
            {"init_limit_ticks", timing_.init_limit_ticks},
            {"sync_limit_ticks", timing_.sync_limit_ticks}};
  }
  std::string describe_settings() const override {
    return "zookeeper ensemble: " + describe(timing_) + " (from --ttl-ms " + std::to_string(ttl_ms_) + ")";
  }

  ImageNeeds image() const override {
    ImageNeeds n;
    // An image of its own: the Redis image neither grows by a JRE nor is rebuilt when runs of both alternate.
    n.repository = "lockcheck-zookeeper";
    n.java = "java";
    n.files = classpath_jars(classpath_);  // at the paths the classpath and the manifests name
    return n;
  }

 private:
  // "" when every member answers `srvr` with a mode and exactly one says leader (one member alone: standalone).
  std::string ready(const std::vector<MemberAddress>& members) const {
    size_t answered = 0, leaders = 0, standalone = 0;
    for (const auto& m : members) {
      const auto s = srvr(m.admin, kZooKeeperQueryTimeout);
      if (!s) continue;
      ++answered;
      leaders += s->mode == "leader" ? 1 : 0;
      standalone += s->mode == "standalone" ? 1 : 0;
    }
    if (members.size() == 1 && standalone == 1) return "";
    if (answered == members.size() && leaders == 1) return "";
    return "srvr: " + std::to_string(answered) + " of " + std::to_string(members.size()) + " members serving, " +
           std::to_string(leaders) + " say leader";
  }

  const ZooKeeperTiming timing_;
  const int64_t ttl_ms_;
  const std::string classpath_;
};

class ZooKeeperSpec final : public ServerSpec {
 public:
  std::string name() const override { return "zookeeper"; }
  std::string description() const override {
    return "a ZooKeeper ensemble (Debian zookeeper 3.8 on java; tickTime from --ttl-ms); every backend";
  }
  const std::vector<ServerOption>& options() const override {
    static const std::vector<ServerOption> none;
    return none;
  }
  std::vector<std::string> protocols(const json&) const override { return {"zk"}; }
  std::vector<ServerBuild> builds(const json&) const override {
    for (const auto& jar : split_classpath(default_classpath())) {
      if (::access(jar.c_str(), R_OK) != 0) return {};
    }
    const std::string v = jar_version("java", default_classpath());
    if (v.empty()) return {};
    return {{v, {{"java", "java"}}, {}, "this machine (Debian zookeeper, java on PATH)"}};
  }
  std::string install_hint() const override {
    return "install Debian's zookeeper and default-jdk-headless: " + std::string(kZooKeeperJar) + " run by java";
  }
  Abilities abilities(const json&) const override {
    Abilities a = Abilities::basic();
    const std::string why = "ZooKeeper times sessions with System.nanoTime (the monotonic clock); the clock shim "
                            "moves the members' wall clock only, and measured here steps of +60 s and -60 s on every "
                            "member expired no session (bench/zookeeper_clock_fault.py)";
    a.refuse(Ability::kClockStep, why);
    a.refuse(Ability::kClockRate, why);
    a.refuse(Ability::kPowerLoss, "the power shim's model of what a power loss drops is written for Redis's files "
                                  "(not tried on a JVM)");
    a.grant(Ability::kLeader);
    a.refuse(Ability::kKeyHolders, "every member holds every node of the tree: aim at the leader instead");
    a.refuse(Ability::kPrimary, "it has no primary that fails over (a leader: see the leader modes)");
    return a;
  }
  std::map<std::string, std::string> legacy_host_programs() const override { return {{"java", "java"}}; }
  std::vector<LegacyHostPort> legacy_host_ports() const override {
    // ZooKeeper's defaults relative to its client port: quorum 2888 and election 3888 at 2181.
    return {{"zookeeper_base_port", "client", 0},
            {"zookeeper_base_port", "quorum", kZooKeeperQuorumPort - kZooKeeperClientPort},
            {"zookeeper_base_port", "election", kZooKeeperElectionPort - kZooKeeperClientPort}};
  }
  std::string test_label() const override { return "zookeeper"; }
  bool heavy_tests() const override { return true; }
  std::unique_ptr<Server> make(const ServerSetup& s) const override { return std::make_unique<ZooKeeperServer>(s); }
};

}  // namespace

// This kind's line in the registry (servers/registry.cc).
ServerKindEntry zookeeper_server_kind() {
  static const ZooKeeperSpec spec;
  return {"zookeeper", &spec};
}

}  // namespace lockcheck
