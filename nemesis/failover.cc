// Nemesis `failover` (a cluster with ability kPrimary: each key's primary replicates asynchronously to replicas
// that take over when it fails; Redis with Sentinel or a Redis Cluster, servers/redis.cc): takes a primary away
// so that a replica is promoted, the fifth failure scenario of FACTS.md: replication is asynchronous, so a lock
// the old primary acknowledged may be missing on the promoted replica, and another client takes it. The primary
// is found at invoke time, asked of the nodes through the ability (Primary): the one the failover authority
// names, else the first node that says it is primary; where each key has its own (shards_by_key), the primary of
// the holder's key (holder targeting) or of "lock-0". Modes:
//   kill         SIGKILL the primary; the stop op restarts it (it then rejoins as a replica)
//   pause        SIGSTOP the primary for the fault period (longer than the failure detection), SIGCONT at stop
//   split-brain  cut the primary from every other data node and Sentinel while clients still reach it: the old
//                primary keeps granting locks that never reach its replicas (until it is demoted, or until its
//                cluster's node timeout runs out) while a replica is promoted and clients that follow the
//                failover lock there too; stop heals. "partition" is its former name.
//   split-brain-with-replica  the same, but one replica stays on the old primary's side (cut from the other
//                replicas and the Sentinels with it), so WAIT 1 still succeeds there while another replica is
//                promoted: WAIT narrows the window, it does not close it (one primary for every key only).
// After applying, invoke waits (at most wait_ms, 10 s by default, less when the run stops) for a replica to
// become primary and names it in detail.promoted (null when none did in time). Holder targeting times the
// fault right after an acquire (the driver waits for one) and, where each key has its own primary, picks the
// holder key's primary and (split-brain) cuts right after that holder's release (see aim).
#include <algorithm>
#include <map>
#include <thread>

#include "nemesis/fault_util.h"
#include "nemesis/holders.h"
#include "nemesis/link_faults.h"

namespace lockcheck {

namespace {

using nlohmann::json;
namespace u = nemesis_util;

const std::vector<std::string>& failover_modes() {
  static const std::vector<std::string> m = {"kill", "pause", "split-brain", "split-brain-with-replica"};
  return m;
}

// The primary to take away now: where each key has its own, the primary of key's shard (as the failover
// authority sees it); else the one the authority names (after an earlier split brain the old primary may still
// call itself primary until it is demoted), else the first node that says it is primary.
std::optional<size_t> current_master(const Cluster& c, const Primary& p, const std::string& key) {
  std::optional<size_t> master = p.elected_primary(key);
  if (master && !p.says_primary(*master)) master.reset();
  if (p.shards_by_key()) return master;
  for (size_t n = 0; n < c.nodes().size() && !master; ++n) {
    if (p.says_primary(n)) master = n;
  }
  return master;
}

std::optional<size_t> node_named(const Cluster& c, const std::string& name) {
  for (size_t n = 0; n < c.nodes().size(); ++n) {
    if (c.nodes()[n].name == name) return n;
  }
  return std::nullopt;
}

// The data nodes to cut a master from, in order: its replicas first (their replication link is where a write
// reaches the other side), those `replicas` names (a JSON array of node names, found earlier) or, when null,
// those replicating from it now; then every other node. Never the master itself.
std::vector<size_t> cut_order(const Cluster& c, const Primary& p, size_t master, const nlohmann::json* replicas) {
  std::vector<size_t> order;
  if (replicas != nullptr && replicas->is_array()) {
    for (const auto& r : *replicas) {
      if (auto n = node_named(c, r.is_string() ? r.get<std::string>() : ""); n && *n != master) order.push_back(*n);
    }
  } else {
    for (size_t n = 0; n < c.nodes().size(); ++n) {
      if (n != master && p.replicates_from(n, master)) order.push_back(n);
    }
  }
  for (size_t n = 0; n < c.nodes().size(); ++n) {
    if (n != master && std::find(order.begin(), order.end(), n) == order.end()) order.push_back(n);
  }
  return order;
}

class Failover : public Nemesis {
 public:
  std::string name() const override { return "failover"; }
  // Lock-state timing: right after an acquire's ok, before the replica has it: the driver applies the fault as
  // soon as it sees the ok (replication is asynchronous; the race is lost when the replica is faster than that).
  TimingRule timing_rule(const FaultPlan&) const override {
    return {TimingTrigger::kAtGrant, false, "failover right after a grant, before the replica has it"};
  }
  std::vector<Ability> needs(bool) const override {
    std::vector<Ability> out = {Ability::kPrimary};
    if (mode_.empty() || mode_ == "kill") out.push_back(Ability::kKill);
    if (mode_.empty() || mode_ == "pause") out.push_back(Ability::kPause);
    if (mode_.empty() || mode_.rfind("split-brain", 0) == 0) out.push_back(Ability::kCutPeers);
    return out;
  }
  std::vector<DetailField> detail_fields() const override {
    return {{"wait_ms", DetailType::kNonNegative},
            {"master", DetailType::kString},
            {"replicas", DetailType::kStrings},
            {"cut_at_release", DetailType::kBool}};
  }

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
    LinkFaults& links = links_of(env);
    if (!start) return heal(env, op, links);
    json detail = u::detail_of(op);
    const Primary* primary = env.cluster.primary();
    if (primary == nullptr) {
      return u::complete(op, OpType::kInfo, json::array(), detail,
                         "the cluster has no primary that fails over: " +
                             env.cluster.abilities().why_not(Ability::kPrimary));
    }
    if (master_) return u::complete(op, OpType::kInfo, json::array(), detail, "a failover is already in force");
    const auto& nodes = env.cluster.nodes();
    // The Redis key whose master goes: the one the holder's client reported (protocol 2), else the request's key.
    const std::string key = detail.contains("aimed_at")
                                ? detail["aimed_at"].value("redis_key", detail["aimed_at"].value("key", kDefaultKey))
                                : kDefaultKey;
    const json where = primary->describe_key(key);
    for (const auto& [k, v] : where.items()) detail[k] = v;
    std::string mode = detail.value("mode", "kill");
    if (mode == "partition") mode = "split-brain";
    // On Redis Cluster, the master aim found just before it waited for the release: asking the nodes again
    // would give the other clients time to take the free lock before the cut (they retry within milliseconds).
    std::optional<size_t> master;
    if (primary->shards_by_key()) master = node_named(env.cluster, detail.value("master", std::string()));
    if (!master) master = current_master(env.cluster, *primary, key);
    // A fault given up before it is in force leaves no cut behind (aim may have cut the replication links).
    const auto give_up = [&](const json& targets, const std::string& why) {
      if (detail.value("cut_at_release", false)) {
        try {
          links.uncut_all(env.cluster, name());
        } catch (const ClusterError&) {
        }
      }
      return u::complete(op, OpType::kInfo, targets, detail, why);
    };
    if (!master) return give_up(json::array(), "no node reports itself master");
    const std::string mname = nodes[*master].name;
    json targets = json::array({mname});
    detail["master"] = mname;
    try {
      if (mode == "kill") {
        env.cluster.kill(*master);
      } else if (mode == "pause") {
        env.cluster.pause(*master);
      } else if (mode == "split-brain" || mode == "split-brain-with-replica") {
        // The old master's side: the master, and with a replica one of its replicas too.
        std::vector<std::string> side = {mname};
        if (mode == "split-brain-with-replica") {
          if (primary->shards_by_key()) {
            throw ClusterError("split-brain-with-replica needs one primary for every key, not one per shard");
          }
          for (size_t n = 0; n < nodes.size() && side.size() < 2; ++n) {
            if (n != *master && primary->replicates_from(n, *master)) side.push_back(nodes[n].name);
          }
          if (side.size() < 2) throw ClusterError("split-brain-with-replica: the master has no replica to keep");
          detail["kept"] = side[1];
        }
        // aim names the replicas, found before its wait; else they are asked now.
        const std::vector<size_t> order =
            cut_order(env.cluster, *primary, *master, detail.contains("replicas") ? &detail["replicas"] : nullptr);
        for (const auto& mine : side) {
          for (size_t n : order) {
            if (std::find(side.begin(), side.end(), nodes[n].name) == side.end()) {
              links.cut(env.cluster, name(), mine, nodes[n].name);
            }
          }
          for (const auto& s : env.cluster.sentinels()) links.cut(env.cluster, name(), mine, s.name);
        }
      } else {
        throw std::invalid_argument("failover: unknown mode '" + mode + "'");
      }
    } catch (const ClusterError& e) {
      return give_up(targets, e.what());
    }
    master_ = *master;
    mode_in_force_ = mode;
    // Wait (bounded) for the failover authority to promote a replica: the primary it names now, other than the
    // old one, saying so itself (an old primary not yet demoted also calls itself primary).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(detail.value("wait_ms", 10000));
    json promoted = nullptr;
    while (std::chrono::steady_clock::now() < deadline && !(env.stopping && env.stopping->load())) {
      auto now = primary->elected_primary(key);
      if (now && *now != *master && primary->says_primary(*now)) promoted = nodes[*now].name;
      if (!promoted.is_null()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    detail["promoted"] = promoted;
    return u::complete(op, OpType::kOk, targets, detail);
  }

  // Holder targeting: the fault lands right after a fresh acquire (the driver waits for one); on Redis Cluster
  // it takes away the master of the holder's key, and a split brain waits (bounded) for that holder's release
  // to complete before the cut. Why: the fresh acquire has reached the replica before the cut could (the
  // master writes it to its replicas in the same event-loop turn as the reply), so the promoted replica keeps that
  // lock, and the old master stops taking writes after cluster-node-timeout, before any replica is promoted (failure
  // detection, then an election delay of 500 ms + 0-500 ms + rank * 1 s): a grant made before the cut is
  // never lost, and one made after a fresh acquire rarely happens in time. Cut right after a release, the key
  // is free on both sides: the next grant, on the cut-off master, exists there only, and its holder is still
  // using the lock when the promoted replica grants it again (if its hold outlasts the failover, which a TTL
  // several times node-timeout + election makes likely). detail: master (found before the wait), replicas
  // (its replicas then: the links to them are cut inside the record of the release, before any client can send
  // its next acquire), after_release (true, or false when the wait ran out), release_wait_ms, cut_at_release
  // (those links were cut so), cut_us (how long that cut held the history up), cut_error.
  void aim(NemesisEnv& env, FaultPlan& plan) const override {
    if (!env.holders) return;
    auto held = env.holders->current();
    if (held.empty()) return mark_not_aimed(plan.detail, "no lock was held when the fault started");
    const Holding h = held.back();
    plan.detail["aimed_at"] = {{"process", h.process}, {"key", h.key}};
    if (!h.keys.empty()) plan.detail["aimed_at"]["redis_key"] = h.keys.front();
    const std::string redis_key = h.keys.empty() ? h.key : h.keys.front();
    const std::string mode = plan.detail.value("mode", "");
    const Primary* primary = env.cluster.primary();
    if (primary == nullptr || !primary->shards_by_key() || (mode != "split-brain" && mode != "partition")) return;
    if (master_) return;  // invoke answers that a failover is in force; nothing may be cut for it
    const std::optional<size_t> master = current_master(env.cluster, *primary, redis_key);
    if (!master) return;  // invoke says so
    plan.detail["master"] = env.cluster.nodes()[*master].name;
    json replicas = json::array();
    for (size_t n = 0; n < env.cluster.nodes().size(); ++n) {
      if (n != *master && primary->replicates_from(n, *master)) replicas.push_back(env.cluster.nodes()[n].name);
    }
    plan.detail["replicas"] = replicas;
    // The master's links to the other data nodes are cut inside the record of the release's completion
    // (on_release): no client can send its next acquire before they are cut, so the next grant cannot reach a
    // replica. Waking
    // this thread first and cutting then lost that race on a loaded machine (a client's acquire went out in
    // the 0.1-2 ms between). The Sentinel and cluster-bus links follow in invoke.
    LinkFaults& links = links_of(env);
    const std::string mname = env.cluster.nodes()[*master].name;
    // Every other data node, not only the replicas: a replica whose link is still syncing after an earlier
    // heal is not named by replicates_from, yet its sync would carry the next grant across.
    std::vector<std::string> cut_first;
    for (size_t n : cut_order(env.cluster, *primary, *master, &replicas)) {
      cut_first.push_back(env.cluster.nodes()[n].name);
    }
    auto cut_us = std::make_shared<std::atomic<int64_t>>(-1);
    auto cut_error = std::make_shared<std::string>();
    Cluster& cluster = env.cluster;
    const std::string owner = name();
    const bool armed = env.holders->on_release(h, [&links, &cluster, owner, mname, cut_first, cut_us, cut_error] {
      const auto t0 = std::chrono::steady_clock::now();
      try {
        for (const auto& r : cut_first) links.cut(cluster, owner, mname, r);
      } catch (const std::exception& e) {
        *cut_error = e.what();
      }
      cut_us->store(
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
    });
    // A careful holder releases within its hold (at most hold_ms_max) plus one release op.
    const auto bound = std::chrono::milliseconds(env.options.hold_ms_max + 2 * env.options.op_timeout_ms + 1000);
    const auto waited_from = std::chrono::steady_clock::now();
    plan.detail["after_release"] = env.holders->wait_until_released(h, bound, env.stopping);
    plan.detail["release_wait_ms"] =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - waited_from).count();
    // cut_at_release: the replication links were cut inside the release's record, taking cut_us.
    const bool ran = armed && env.holders->cancel_on_release(h);
    plan.detail["cut_at_release"] = ran && cut_error->empty();
    if (ran) plan.detail["cut_us"] = cut_us->load();
    if (!cut_error->empty()) plan.detail["cut_error"] = *cut_error;
  }

  void teardown(NemesisEnv& env) noexcept override {
    if (!master_) return;
    try {
      if (mode_in_force_ == "pause") env.cluster.resume(*master_);
      if (mode_in_force_.rfind("split-brain", 0) == 0) links_of(env).uncut_all(env.cluster, name());
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
      if (mode_in_force_.rfind("split-brain", 0) == 0) links.uncut_all(env.cluster, name());
    } catch (const ClusterError& e) {
      return u::complete(op, OpType::kInfo, json::array({mname}), {{"mode", mode_in_force_}}, e.what());
    }
    master_.reset();
    return u::complete(op, OpType::kOk, json::array({mname}), {{"mode", mode_in_force_}});
  }

  // Which key's master to take away on Redis Cluster when holder targeting names none (the lock workload's
  // first key).
  static constexpr const char* kDefaultKey = "lock-0";

  // The run's shared network faults, else this nemesis's own (LinkFaults locks its own state, so aim, which is
  // const, may cut through it too).
  LinkFaults& links_of(NemesisEnv& env) const { return env.links ? *env.links : own_links_; }

  std::string mode_;
  std::optional<size_t> master_;
  std::string mode_in_force_;
  mutable LinkFaults own_links_;
};

}  // namespace

std::unique_ptr<Nemesis> make_failover_nemesis() { return std::make_unique<Failover>(); }

// This nemesis's line in the registry (nemesis/registry.cc): its name, what `lockcheck list` says of it, its factory.
NemesisInfo failover_nemesis() {
  return {"failover",
          "take a key's primary away so a replica is promoted (a server with failover: modes kill, pause, "
          "split-brain, split-brain-with-replica)",
          make_failover_nemesis};
}

}  // namespace lockcheck
