// The pure parts of the ZooKeeper server kind (servers/zookeeper.cc), for its unit tests: the session timing it
// derives from the lock's TTL, the answer of `srvr`, and a jar manifest's Class-Path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lockcheck {

// The session timing of an ensemble: tickTime = min(max(ttl / 2, 100), 2000) ms (ZooKeeper's default tickTime
// is 2000), sessions allowed from 2 to 20 ticks (ZooKeeper's defaults in ticks, written out). initLimit and
// syncLimit (in ticks) keep at least 10 s and 2.5 s: five JVMs on two cores need that at start. So every TTL
// from 200 ms to 40 s is a session timeout the ensemble grants as asked (below 200 ms sessions last 200 ms).
struct ZooKeeperTiming {
  int tick_ms = 2000;
  int min_session_ms = 4000;
  int max_session_ms = 40000;
  int init_limit_ticks = 10;
  int sync_limit_ticks = 5;
};
ZooKeeperTiming zookeeper_timing(int64_t ttl_ms);
// "tickTime 500 ms, sessions 1000-10000 ms, initLimit 20 ticks, syncLimit 5 ticks": for the log and the results.
std::string describe(const ZooKeeperTiming& t);

// What `srvr` says of one member.
struct ZooKeeperStatus {
  std::string version;  // "3.8.0" (of "Zookeeper version: 3.8.0-<commit>, built on ...")
  std::string mode;     // "leader", "follower", "standalone", "observer"
};
// Parses a `srvr` answer (nullopt when it names no Mode, e.g. "This ZooKeeper instance is not currently serving
// requests").
std::optional<ZooKeeperStatus> parse_zookeeper_srvr(const std::string& text);

// The Class-Path entries of a manifest's text (continuation lines joined), each made a path: an absolute entry as
// is, a relative one against jar_dir (Class-Path entries are URLs relative to the jar's folder).
std::vector<std::string> parse_manifest_class_path(const std::string& manifest, const std::string& jar_dir);

}  // namespace lockcheck
