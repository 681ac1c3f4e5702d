// The essentials of a ZooKeeper ensemble on a remote backend (docker, ssh: the Remote seam's ZooKeeper kind),
// checked the same way on each: every member serving with one leader after start; a killed member restarts and
// rejoins; a paused member does not answer until resumed; the leader cut from the four others (iptables by the
// hosts' addresses: its quorum and election links too) stops serving and they elect another; healed, every member
// serves again; clock faults are refused with the local backend's measured reason. Asks the members `srvr`.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/zookeeper_common.h"
#include "core/cluster.h"
#include "tests/support/cluster_waits.h"

namespace lockcheck {
namespace testing_util {

// "" once every member serves and exactly one leads (bounded by timeout); else the last reason.
inline std::string wait_zookeeper_ready(const std::vector<Endpoint>& members, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string why;
  do {
    why = zookeeper_ready_error(members, std::chrono::milliseconds(1000));
    if (why.empty()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (std::chrono::steady_clock::now() < deadline);
  return why;
}

inline std::vector<Endpoint> member_endpoints(const Cluster& c) {
  std::vector<Endpoint> all;
  for (const auto& n : c.nodes()) all.push_back(n.endpoint);
  return all;
}

// c: started, five members, one per host. Leaves it healed, every member up.
inline void check_remote_zookeeper_essentials(Cluster& c) {
  using std::chrono::milliseconds;
  ASSERT_EQ(c.nodes().size(), 5u);
  EXPECT_EQ(c.server(), ServerKind::kZooKeeper);
  const std::vector<Endpoint> all = member_endpoints(c);
  EXPECT_EQ(wait_zookeeper_ready(all, milliseconds(0)), "") << "not ready right after start()";
  const auto leader = c.leader();
  ASSERT_TRUE(leader.has_value());

  // kill + restart: the member comes back with its data dir and the ensemble is whole again.
  const size_t k = (*leader + 1) % 5;
  c.kill(k);
  EXPECT_FALSE(c.is_running(k));
  EXPECT_FALSE(zookeeper_srvr(all[k], milliseconds(500)).has_value()) << "a killed member answered";
  c.restart(k);
  EXPECT_TRUE(c.is_running(k));
  EXPECT_EQ(wait_zookeeper_ready(all, milliseconds(30000)), "") << c.nodes()[k].name << " did not rejoin";

  // pause / resume
  c.pause(k);
  EXPECT_FALSE(zookeeper_srvr(all[k], milliseconds(500)).has_value()) << "a paused member answered";
  c.resume(k);
  EXPECT_EQ(wait_zookeeper_ready(all, milliseconds(30000)), "") << c.nodes()[k].name << " not serving after resume";

  // The leader cut from the others: it stops serving (within syncLimit ticks), the four elect another; healed,
  // everyone serves again.
  const auto before = wait_for_leader(c, std::nullopt, milliseconds(10000));
  ASSERT_TRUE(before.has_value());
  const std::string victim = c.nodes()[*before].name;
  std::vector<Endpoint> rest;
  for (size_t n = 0; n < all.size(); ++n) {
    if (n == *before) continue;
    c.cut(victim, c.nodes()[n].name);
    rest.push_back(all[n]);
  }
  EXPECT_EQ(wait_zookeeper_ready(rest, milliseconds(30000)), "") << "no new leader after cutting " << victim;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (zookeeper_srvr(all[*before], milliseconds(1000)).has_value() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(200));
  }
  EXPECT_FALSE(zookeeper_srvr(all[*before], milliseconds(1000)).has_value()) << victim << " still serves, cut off";
  c.heal_all();
  EXPECT_EQ(wait_zookeeper_ready(all, milliseconds(30000)), "") << "not whole again after the heal";

  // Clock faults: refused as on the local backend (sessions are timed on the monotonic clock).
  try {
    c.set_clock_offset(0, std::chrono::seconds(60));
    ADD_FAILURE() << "a clock fault on a ZooKeeper member was accepted";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("nanoTime"), std::string::npos) << e.what();
  }
}

}  // namespace testing_util
}  // namespace lockcheck
