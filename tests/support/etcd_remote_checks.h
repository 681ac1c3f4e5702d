// The essentials of an etcd cluster on a remote backend (docker, ssh: the Remote seam's etcd kind), checked the
// same way on each: one leader and every member healthy after start; a killed member restarts and rejoins; a
// paused member is unhealthy until resumed; cutting the leader from the others elects another, and healing
// brings every member back; clock faults are refused. Uses the harness's etcdctl against the members.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/etcd_common.h"
#include "cluster/server_builds.h"
#include "core/cluster.h"
#include "tests/support/cluster_waits.h"

namespace lockcheck {
namespace testing_util {

// "" once every member of c answers with one leader and is healthy (bounded by timeout); else the last reason.
inline std::string wait_etcd_ready(const Cluster& c, std::chrono::milliseconds timeout) {
  std::vector<Endpoint> all;
  for (const auto& n : c.nodes()) all.push_back(n.endpoint);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string why;
  do {
    why = etcd_ready_error("etcdctl", all, std::chrono::milliseconds(1000));
    if (why.empty()) return "";
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (std::chrono::steady_clock::now() < deadline);
  return why;
}

// The leader, asked until one is named other than `not_this` (bounded by timeout): cluster_waits.h's.
inline std::optional<size_t> wait_etcd_leader(const Cluster& c, std::optional<size_t> not_this,
                                              std::chrono::milliseconds timeout) {
  return wait_for_leader(c, not_this, timeout);
}

// Every member of c answers `version` when asked (etcdctl endpoint status), and the run's line says it.
inline void expect_members_say(const Cluster& c, const std::string& etcdctl, const std::string& version) {
  const auto versions = read_node_versions(c, etcdctl);
  ASSERT_EQ(versions.size(), c.nodes().size());
  for (size_t i = 0; i < versions.size(); ++i) EXPECT_EQ(versions[i], version) << c.nodes()[i].name;
  EXPECT_EQ(describe_node_versions(c, versions), version);
}

// c: started, five members. Leaves it healed, every member up.
inline void check_remote_etcd_essentials(Cluster& c) {
  using std::chrono::milliseconds;
  ASSERT_EQ(c.nodes().size(), 5u);
  EXPECT_EQ(c.server(), ServerKind::kEtcd);
  for (const auto& n : c.nodes()) EXPECT_EQ(n.role, NodeRole::kMaster) << n.name;
  EXPECT_EQ(wait_etcd_ready(c, milliseconds(0)), "") << "not ready right after start()";
  const auto leader = c.leader();
  ASSERT_TRUE(leader.has_value());

  // kill + restart: the member comes back with its data dir and the cluster is whole again.
  const size_t k = (*leader + 1) % 5;
  c.kill(k);
  EXPECT_FALSE(c.is_running(k));
  EXPECT_NE(wait_etcd_ready(c, milliseconds(0)), "");
  c.restart(k);
  EXPECT_TRUE(c.is_running(k));
  EXPECT_EQ(wait_etcd_ready(c, milliseconds(20000)), "") << c.nodes()[k].name << " did not rejoin";

  // pause / resume
  c.pause(k);
  EXPECT_NE(wait_etcd_ready(c, milliseconds(0)), "") << "a paused member answered";
  c.resume(k);
  EXPECT_EQ(wait_etcd_ready(c, milliseconds(20000)), "") << c.nodes()[k].name << " not healthy after resume";

  // The leader cut from the others: the majority elects another; healed, everyone is back.
  const auto before = wait_etcd_leader(c, std::nullopt, milliseconds(10000));
  ASSERT_TRUE(before.has_value());
  const std::string victim = c.nodes()[*before].name;
  for (const auto& n : c.nodes()) {
    if (n.name != victim) c.cut(victim, n.name);
  }
  const auto next = wait_etcd_leader(c, before, milliseconds(20000));
  EXPECT_TRUE(next.has_value()) << "no new leader after cutting " << victim << " from its peers";
  c.heal_all();
  EXPECT_EQ(wait_etcd_ready(c, milliseconds(20000)), "") << "not whole again after the heal";

  // Clock faults do not reach etcd (a Go program: the shim's LD_PRELOAD does not apply).
  try {
    c.set_clock_offset(0, std::chrono::hours(1));
    ADD_FAILURE() << "a clock fault on etcd was accepted";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("vDSO"), std::string::npos) << e.what();
  }
}

}  // namespace testing_util
}  // namespace lockcheck
