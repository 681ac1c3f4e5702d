#include "cluster/zookeeper_common.h"

#include <algorithm>
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
