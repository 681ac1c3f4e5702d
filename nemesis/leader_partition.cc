// Nemesis `leader-partition`: cuts the node that leads the cluster *now* from every other party (the other
// nodes and every client slot), then heals -- the "leader isolated" partition of Jepsen's etcd analysis. Which node leads is not
// known when the schedule is drawn, so the plan says only "the leader" and invoke asks the cluster
// (Cluster::leader(), ability kLeader: the member its peers name; when none does at that moment the fault answers
// info, "no leader known", without cutting anything). The completion names the node it isolated and the links it
// cut. Stop heals the links this nemesis cut.
#include "core/party.h"
#include "nemesis/fault_util.h"
#include "nemesis/link_faults.h"

namespace lockcheck {

namespace {

using nlohmann::json;
namespace u = nemesis_util;

class LeaderPartition : public Nemesis {
 public:
  std::string name() const override { return "leader-partition"; }
  // Lock-state timing: at a grant, so the leader that granted it is isolated while the fresh lock is live.
  TimingRule timing_rule(const FaultPlan&) const override {
    return {TimingTrigger::kAtGrant, false, "leader partition at a grant"};
  }
  std::vector<Ability> needs(bool) const override { return {Ability::kLeader, Ability::kCutPeers}; }

  FaultPlan plan(const PlanContext& ctx, std::mt19937_64& rng) const override {
    (void)rng;
    FaultPlan p;
    p.f = "partition";
    p.stop_f = "heal";
    p.duration_ms = ctx.interval_ms;
    p.detail["mode"] = "leader";
    return p;
  }

  Op invoke(NemesisEnv& env, const Op& op) override {
    LinkFaults& links = env.links ? *env.links : own_links_;
    if (u::phase_of(op) == "start") {
      json detail = u::detail_of(op);
      const auto leader = env.cluster.leader();
      if (!leader) return u::complete(op, OpType::kInfo, json::array(), detail, "no leader known: nothing cut");
      const std::string victim = env.cluster.nodes().at(*leader).name;
      std::vector<std::string> others;
      for (const auto& n : env.cluster.nodes()) {
        if (n.name != victim) others.push_back(n.name);
      }
      for (const auto& s : env.cluster.sentinels()) others.push_back(s.name);
      for (int p = 0; p < env.options.concurrency; ++p) others.push_back(Party::client(p).name());
      std::string error;
      json cut = json::array();
      std::vector<LinkFaults::Pair> pairs;
      for (const auto& o : others) {
        pairs.emplace_back(victim, o);
        cut.push_back({victim, o});
      }
      try {
        links.cut_many(env.cluster, name(), pairs);  // one fault, one bounded wait
      } catch (const ClusterError& e) {
        error = e.what();
      }
      detail["isolated"] = victim;
      // Which links a failed batch did cut is not known (the op is info): they are listed as tried, not as cut.
      detail[error.empty() ? "links" : "links_tried"] = cut;
      return u::complete(op, error.empty() ? OpType::kOk : OpType::kInfo, json::array({victim}), detail, error);
    }
    return u::heal_owned_links(links, env.cluster, name(), op);
  }

  void teardown(NemesisEnv& env) noexcept override {
    u::teardown_owned_links(env.links ? *env.links : own_links_, env.cluster, name());
  }

 private:
  LinkFaults own_links_;
};

}  // namespace

std::unique_ptr<Nemesis> make_leader_partition_nemesis() { return std::make_unique<LeaderPartition>(); }

// This nemesis's line in the registry (nemesis/registry.cc).
NemesisInfo leader_partition_nemesis() {
  return {"leader-partition",
          "cut the current leader (asked of the cluster at the fault: etcd) from every node and client, then heal",
          make_leader_partition_nemesis};
}

}  // namespace lockcheck
