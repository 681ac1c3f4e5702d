// Nemesis `failover` (replicated topology: a master, replicas, 3 Sentinels): takes the current master away so
// that Sentinel promotes a replica, the fifth failure scenario of FACTS.md: replication is asynchronous, so a
// lock the old master acknowledged may be missing on the promoted replica, and another client takes it.
// The current master is found at invoke time (ROLE on each running data node, asked directly). Modes:
//   kill       SIGKILL the master; the stop op restarts it (Sentinel then turns it into a replica)
//   pause      SIGSTOP the master for the fault period (longer than Sentinel's down-after), SIGCONT at stop
//   partition  cut the master from every other data node and Sentinel while clients still reach it (a split
//              brain: the old master keeps granting locks until it is demoted); stop heals. On the local
//              backend this needs node-to-node links through the fault proxy (peer links of the replicated
//              topology); where they are direct, the cut does not stop replication or Sentinel.
// After applying, invoke waits (at most wait_ms, 10 s by default, less when the run stops) for a replica to
// report itself master and names it in detail.promoted (null when none did in time). Holder targeting changes
// only the timing (the fault lands right after an acquire): the master is the only target there is.
#include <hiredis/hiredis.h>

#include <map>
#include <thread>

#include "harness/redis_conn.h"
#include "nemesis/fault_util.h"
#include "nemesis/link_faults.h"

namespace lockcheck {

namespace {

using nlohmann::json;
namespace u = nemesis_util;

const std::vector<std::string>& failover_modes() {
  static const std::vector<std::string> m = {"kill", "pause", "split-brain"};
  return m;
}

// "master", "slave" or "" (down, paused, unreachable) for node n, asked on its own endpoint.
std::string role_of(const Cluster& c, size_t n) {
  if (!c.is_running(n)) return "";
  RedisConn conn(c.nodes()[n].own_endpoint(), std::chrono::milliseconds(150), std::chrono::milliseconds(150));
  Reply r = conn.command({"ROLE"});
  if (!r.ok() || !r.raw()) return "";
  const redisReply* raw = r.raw();
  if (raw->type != REDIS_REPLY_ARRAY || raw->elements < 1 || !raw->element[0]->str) return "";
  return std::string(raw->element[0]->str, raw->element[0]->len);
}

// The data node the Sentinels name master now (the answer most of them give, asked directly); nullopt when no
// Sentinel answers or the address is no node's.
std::optional<size_t> sentinels_master(const Cluster& c) {
  std::map<size_t, int> votes;
  for (const auto& s : c.sentinels()) {
    RedisConn conn(s.own_endpoint(), std::chrono::milliseconds(150), std::chrono::milliseconds(300));
    Reply r = conn.command({"SENTINEL", "get-master-addr-by-name", kSentinelMasterName});
    const redisReply* raw = r.raw();
    if (!r.ok() || !raw || raw->type != REDIS_REPLY_ARRAY || raw->elements != 2 || !raw->element[0]->str ||
        !raw->element[1]->str) {
      continue;
    }
    const Endpoint ep{raw->element[0]->str, std::atoi(raw->element[1]->str)};
    for (size_t n = 0; n < c.nodes().size(); ++n) {
      if (c.nodes()[n].endpoint == ep) ++votes[n];
    }
  }
  std::optional<size_t> best;
  for (const auto& v : votes) {
    if (!best || v.second > votes[*best]) best = v.first;
  }
  return best;
}

class Failover : public Nemesis {
 public:
  std::string name() const override { return "failover"; }

  bool select_mode(const std::string& mode) override {
    const std::string m = mode == "partition" ? "split-brain" : mode;  // the mode's former name
    if (std::find(failover_modes().begin(), failover_modes().end(), m) == failover_modes().end()) return false;
    mode_ = m;
    return true;
  }

  FaultPlan plan(const PlanContext& ctx, std::mt19937_64& rng) const override {
    FaultPlan p;
    p.f = "failover";
    p.stop_f = "failover-heal";
    p.duration_ms = ctx.interval_ms;
    p.detail = {{"mode", mode_.empty() ? u::pick(failover_modes(), rng) : mode_}, {"wait_ms", 10000}};
    return p;  // targets: the master of the moment, found by invoke
  }

  Op invoke(NemesisEnv& env, const Op& op) override {
    const bool start = u::phase_of(op) == "start";
    LinkFaults& links = env.links ? *env.links : own_links_;
    if (!start) return heal(env, op, links);
    json detail = u::detail_of(op);
    if (env.config.topology != Topology::kReplicated) {
      return u::complete(op, OpType::kInfo, json::array(), detail, "failover needs --topology replicated");
    }
    if (master_) return u::complete(op, OpType::kInfo, json::array(), detail, "a failover is already in force");
    const auto& nodes = env.cluster.nodes();
    // The master Sentinel names (after an earlier split brain the old master may still call itself master
    // until Sentinel demotes it); else the first node that reports itself master.
    std::optional<size_t> master = sentinels_master(env.cluster);
    if (master && role_of(env.cluster, *master) != "master") master.reset();
    for (size_t n = 0; n < nodes.size() && !master; ++n) {
      if (role_of(env.cluster, n) == "master") master = n;
    }
    if (!master) return u::complete(op, OpType::kInfo, json::array(), detail, "no node reports itself master");
    std::string mode = detail.value("mode", "kill");
    if (mode == "partition") mode = "split-brain";
    const std::string mname = nodes[*master].name;
    json targets = json::array({mname});
    detail["master"] = mname;
    try {
      if (mode == "kill") {
        env.cluster.kill(*master);
      } else if (mode == "pause") {
        env.cluster.pause(*master);
      } else if (mode == "split-brain") {
        for (const auto& n : nodes) {
          if (n.name != mname) links.cut(env.cluster, name(), mname, n.name);
        }
        for (const auto& s : env.cluster.sentinels()) links.cut(env.cluster, name(), mname, s.name);
      } else {
        throw std::invalid_argument("failover: unknown mode '" + mode + "'");
      }
    } catch (const ClusterError& e) {
      return u::complete(op, OpType::kInfo, targets, detail, e.what());
    }
    master_ = *master;
    mode_in_force_ = mode;
    // Wait (bounded) for Sentinel to promote a replica.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(detail.value("wait_ms", 10000));
    json promoted = nullptr;
    while (std::chrono::steady_clock::now() < deadline && !(env.stopping && env.stopping->load())) {
      for (size_t n = 0; n < nodes.size() && promoted.is_null(); ++n) {
        if (n != *master && role_of(env.cluster, n) == "master") promoted = nodes[n].name;
      }
      if (!promoted.is_null()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    detail["promoted"] = promoted;
    return u::complete(op, OpType::kOk, targets, detail);
  }

  void teardown(NemesisEnv& env) noexcept override {
    if (!master_) return;
    try {
      if (mode_in_force_ == "pause") env.cluster.resume(*master_);
      if (mode_in_force_ == "split-brain") (env.links ? *env.links : own_links_).uncut_all(env.cluster, name());
      // kill: the cluster's stop() ends the run with every node down anyway.
    } catch (...) {
    }
    master_.reset();
  }

 private:
  Op heal(NemesisEnv& env, const Op& op, LinkFaults& links) {
    if (!master_) return u::complete(op, OpType::kOk, json::array(), json::object());
    const std::string mname = env.cluster.nodes()[*master_].name;
    try {
      if (mode_in_force_ == "kill") env.cluster.restart(*master_);
      if (mode_in_force_ == "pause") env.cluster.resume(*master_);
      if (mode_in_force_ == "split-brain") links.uncut_all(env.cluster, name());
    } catch (const ClusterError& e) {
      return u::complete(op, OpType::kInfo, json::array({mname}), {{"mode", mode_in_force_}}, e.what());
    }
    master_.reset();
    return u::complete(op, OpType::kOk, json::array({mname}), {{"mode", mode_in_force_}});
  }

  std::string mode_;
  std::optional<size_t> master_;
  std::string mode_in_force_;
  LinkFaults own_links_;
};

}  // namespace

std::unique_ptr<Nemesis> make_failover_nemesis() { return std::make_unique<Failover>(); }

}  // namespace lockcheck
