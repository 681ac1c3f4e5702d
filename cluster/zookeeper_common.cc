#include "cluster/zookeeper_common.h"

#include <unistd.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "cluster/tcp_probe.h"
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

std::string zookeeper_zoo_cfg(const ZooKeeperMemberConfig& c) {
  std::ostringstream o;
  o << "# written by lockcheck (cluster/zookeeper_common.h)\n"
    << "tickTime=" << c.timing.tick_ms << "\n"
    << "initLimit=" << c.timing.init_limit_ticks << "\n"
    << "syncLimit=" << c.timing.sync_limit_ticks << "\n"
    << "minSessionTimeout=" << c.timing.min_session_ms << "\n"
    << "maxSessionTimeout=" << c.timing.max_session_ms << "\n"
    << "dataDir=" << c.data_dir << "\n"
    << "clientPort=" << c.client_listen.port << "\n"
    << "clientPortAddress=" << c.client_listen.host << "\n"
    << "admin.enableServer=false\n"
    << "4lw.commands.whitelist=srvr,ruok,mntr,stat\n"
    << "reconfigEnabled=false\n"
    // Several members of a run may share a host (ssh): no autopurge thread, no JMX port; the harness removes data.
    << "autopurge.purgeInterval=0\n";
  for (size_t m = 0; m < c.quorum.size() && m < c.election.size(); ++m) {
    const bool self = static_cast<int>(m) + 1 == c.id;
    o << "server." << m + 1 << "=" << (self ? std::string("0.0.0.0") : c.quorum[m].host) << ":" << c.quorum[m].port
      << ":" << c.election[m].port << "\n";
  }
  return o.str();
}

std::string zookeeper_default_classpath() { return std::string(kZooKeeperJar) + ":" + kSlf4jSimpleJar; }

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

}  // namespace

std::vector<std::string> split_classpath(const std::string& classpath) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= classpath.size();) {
    const size_t end = std::min(classpath.find(':', start), classpath.size());
    if (end > start) out.push_back(classpath.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

void check_zookeeper_classpath(const std::string& classpath) {
  for (const auto& jar : split_classpath(classpath)) {
    if (::access(jar.c_str(), R_OK) != 0) {
      throw ClusterError("ZooKeeper's classpath names " + jar +
                         ", which is not here (--server zookeeper needs Debian's zookeeper package)");
    }
  }
}

std::vector<std::string> zookeeper_classpath_jars(const std::string& classpath) {
  check_zookeeper_classpath(classpath);
  std::vector<std::string> out, level = split_classpath(classpath);
  std::set<std::string> seen;
  // Breadth first, one manifest read per level; bounded (a manifest cycle ends at `seen` anyway).
  for (int depth = 0; depth < 16 && !level.empty(); ++depth) {
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

std::vector<std::string> zookeeper_member_argv(const std::string& java, const std::string& classpath,
                                               const std::string& zoo_cfg) {
  return {java,
          "-Xms32m",
          "-Xmx128m",
          "-XX:+UseSerialGC",
          "-XX:TieredStopAtLevel=1",
          "-XX:-UsePerfData",
          "-Djava.net.preferIPv4Stack=true",
          "-Dorg.slf4j.simpleLogger.showDateTime=true",
          "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
          "-cp",
          classpath,
          kZooKeeperMain,
          zoo_cfg};
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

std::optional<ZooKeeperStatus> zookeeper_srvr(const Endpoint& member, std::chrono::milliseconds timeout) {
  const auto text = tcp_exchange(member, "srvr", timeout);
  if (!text) return std::nullopt;
  return parse_zookeeper_srvr(*text);
}

std::string zookeeper_ready_error(const std::vector<Endpoint>& members, std::chrono::milliseconds timeout) {
  size_t answered = 0, leaders = 0, standalone = 0;
  for (const auto& m : members) {
    const auto s = zookeeper_srvr(m, timeout);
    if (!s) continue;
    ++answered;
    leaders += s->mode == "leader" ? 1 : 0;
    standalone += s->mode == "standalone" ? 1 : 0;
  }
  if (members.size() == 1 && standalone == 1) return "";
  if (answered == members.size() && leaders == 1) return "";
  return "srvr: " + std::to_string(answered) + " of " + std::to_string(members.size()) +
         " members serving, " + std::to_string(leaders) + " say leader";
}

std::optional<size_t> zookeeper_leader(const std::vector<std::optional<Endpoint>>& members,
                                       std::chrono::milliseconds timeout) {
  std::optional<size_t> leader;
  for (size_t n = 0; n < members.size(); ++n) {
    if (!members[n]) continue;
    const auto s = zookeeper_srvr(*members[n], timeout);
    if (!s || (s->mode != "leader" && s->mode != "standalone")) continue;
    if (leader) return std::nullopt;  // two say so (an old leader not yet stepped down): unknown
    leader = n;
  }
  return leader;
}

std::string zookeeper_jar_version(const std::string& java, const std::string& classpath) {
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

std::string zookeeper_clock_refusal(const std::string& name) {
  return "clock faults on ZooKeeper member " + name +
         ": ZooKeeper times sessions with System.nanoTime (CLOCK_MONOTONIC), which the clock shim leaves alone; "
         "the shim does move the JVM's wall clock, but measured here steps of +60 s and -60 s on every member "
         "expired no 2 s session (bench/zookeeper_clock_fault.py)";
}

}  // namespace lockcheck
