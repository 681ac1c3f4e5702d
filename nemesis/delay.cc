// Nemesis `delay`: added latency and jitter on chosen links (Cluster::set_delay: each chunk is held delay +
// uniform[0, jitter] ms, order kept). Modes:
//   node    every link of one node (client slots, other nodes, Sentinels)
//   client  every link of one client slot to the nodes (a slow client)
//   all     every client slot <-> node link
// The delay is --delay-ms when given, else drawn in [ttl/20, ttl] ms (at least 5 ms); the jitter in [0, delay/2]:
// from slow-but-in-time to late-past-the-TTL replies. Holder targeting re-aims `client` at the current holder's
// slot and `node` at a node that holds its key. Stop removes this nemesis's delays (a cut another nemesis set
// stays).
#include "nemesis/fault_util.h"
#include "nemesis/holders.h"
#include "nemesis/link_faults.h"

namespace lockcheck {

namespace {

using nlohmann::json;
namespace u = nemesis_util;

const std::vector<std::string>& delay_modes() {
  static const std::vector<std::string> m = {"node", "client", "all"};
  return m;
}

json links_of(const PlanContext& ctx, const std::string& mode, const std::string& who) {
  json links = json::array();
  if (mode == "client") {
    for (const auto& n : ctx.nodes) links.push_back({who, n});
  } else if (mode == "node") {
    for (const auto& s : ctx.slots) links.push_back({s, who});
    for (const auto& n : ctx.nodes) {
      if (n != who) links.push_back({n, who});
    }
    for (const auto& s : ctx.sentinels) links.push_back({s, who});
  } else {
    for (const auto& s : ctx.slots) {
      for (const auto& n : ctx.nodes) links.push_back({s, n});
    }
  }
  return links;
}

class Delay : public Nemesis {
 public:
  std::string name() const override { return "delay"; }
  // Lock-state timing: at a grant, or, once the workload renews (an extend seen), at an extend's invoke: a slow
  // link then holds the renewal in flight past the lock's expiry (the extend/renewal race).
  TimingRule timing_rule(const FaultPlan&) const override {
    return {TimingTrigger::kAtGrant, true, "delay at a grant, or at an extend's invoke where the workload renews"};
  }
  // Mode node delays a node's links to the other servers too, and aims at a node that holds the holder's key;
  // client and all delay client links only (the fault proxy, on every backend).
  std::vector<Ability> needs(bool holder_targeting) const override {
    std::vector<Ability> out;
    if (mode_.empty() || mode_ == "node") {
      out.push_back(Ability::kDelayPeers);
      if (holder_targeting) out.push_back(Ability::kKeyHolders);
    }
    return out;
  }
  std::vector<std::string> run_settings() const override { return {"delay_ms"}; }
  std::vector<DetailField> detail_fields() const override {
    return {{"delay_ms", DetailType::kNonNegative},
            {"jitter_ms", DetailType::kNonNegative},
            {"links", DetailType::kLinks}};
  }

  bool select_mode(const std::string& mode) override {
    if (std::find(delay_modes().begin(), delay_modes().end(), mode) == delay_modes().end()) return false;
    mode_ = mode;
    return true;
  }

  FaultPlan plan(const PlanContext& ctx, std::mt19937_64& rng) const override {
    std::string mode = mode_.empty() ? u::pick(delay_modes(), rng) : mode_;
    if (ctx.slots.empty()) mode = "node";
    const std::string who = mode == "client" ? u::pick(ctx.slots, rng) : mode == "node" ? u::pick(ctx.nodes, rng) : "";
    const int64_t lo = std::max<int64_t>(5, ctx.ttl_ms / 20);
    int64_t delay = uniform(rng, lo, std::max(lo, ctx.ttl_ms));
    if (ctx.delay_ms > 0) delay = ctx.delay_ms;  // --delay-ms; drawn all the same, so the later draws do not move
    const int64_t jitter = uniform(rng, 0, delay / 2);
    return make_plan(ctx, mode, who, delay, jitter);
  }

  void aim(NemesisEnv& env, FaultPlan& plan) const override {
    if (!env.holders) return;
    auto held = env.holders->current();
    if (held.empty()) return mark_not_aimed(plan.detail, "no lock was held when the fault started");
    const Holding& h = held.back();
    const std::string mode = plan.detail.value("mode", "");
    std::string who;
    nlohmann::json holder_nodes;
    if (mode == "client") {
      who = slot_of(h.process, env.options.concurrency);
    } else if (mode == "node") {
      const HolderNodes found = find_holder_nodes(env.cluster, h);
      holder_nodes = found.to_json(env.cluster);
      if (found.nodes.empty()) {
        plan.detail["aimed_at"] = {{"process", h.process}, {"key", h.key}};
        plan.detail["holder_nodes"] = holder_nodes;
        return mark_not_aimed(plan.detail, found.why_none());
      }
      who = env.cluster.nodes()[found.nodes.front()].name;
    } else {
      return mark_not_aimed(plan.detail, "mode " + mode + " is not aimed at a holder");
    }
    std::vector<std::string> nodes, sentinels;
    for (const auto& n : env.cluster.nodes()) nodes.push_back(n.name);
    for (const auto& s : env.cluster.sentinels()) sentinels.push_back(s.name);
    plan = make_plan(PlanContext::from(env.options, nodes, sentinels), mode, who, plan.detail.value("delay_ms", 0),
                     plan.detail.value("jitter_ms", 0));
    plan.detail["aimed_at"] = {{"process", h.process}, {"key", h.key}};
    if (!holder_nodes.is_null()) plan.detail["holder_nodes"] = holder_nodes;
  }

  Op invoke(NemesisEnv& env, const Op& op) override {
    LinkFaults& links = env.links ? *env.links : own_links_;
    if (u::phase_of(op) == "start") {
      json detail = u::detail_of(op);
      const auto d = std::chrono::milliseconds(detail.value("delay_ms", 0));
      const auto j = std::chrono::milliseconds(detail.value("jitter_ms", 0));
      std::string error;
      std::vector<LinkFaults::Pair> pairs;
      for (const auto& l : detail.value("links", json::array())) {
        pairs.emplace_back(l.at(0).get<std::string>(), l.at(1).get<std::string>());
      }
      try {
        links.delay_many(env.cluster, name(), pairs, d, j);  // one fault, one bounded wait
      } catch (const ClusterError& e) {
        error = e.what();
      }
      return u::complete(op, error.empty() ? OpType::kOk : OpType::kInfo, op.value.value("targets", json::array()),
                         detail, error);
    }
    json removed = json::array();
    try {
      for (const auto& p : links.undelay_all(env.cluster, name())) removed.push_back({p.first, p.second});
    } catch (const ClusterError& e) {
      return u::complete(op, OpType::kInfo, op.value.value("targets", json::array()), {{"removed", removed}}, e.what());
    }
    return u::complete(op, OpType::kOk, op.value.value("targets", json::array()), {{"removed", removed}});
  }

  void teardown(NemesisEnv& env) noexcept override {
    LinkFaults& links = env.links ? *env.links : own_links_;
    try {
      links.undelay_all(env.cluster, name());
    } catch (...) {
      links.heal_all(env.cluster);
    }
  }

 private:
  static FaultPlan make_plan(const PlanContext& ctx, const std::string& mode, const std::string& who, int64_t delay_ms,
                             int64_t jitter_ms) {
    FaultPlan p;
    p.f = "delay";
    p.stop_f = "heal-delay";
    p.duration_ms = ctx.interval_ms;
    p.targets = mode == "all" ? json(ctx.slots) : json::array({who});
    p.detail = {{"mode", mode}, {"delay_ms", delay_ms}, {"jitter_ms", jitter_ms}, {"links", links_of(ctx, mode, who)}};
    return p;
  }

  std::string mode_;
  LinkFaults own_links_;
};

}  // namespace

std::unique_ptr<Nemesis> make_delay_nemesis() { return std::make_unique<Delay>(); }

// This nemesis's line in the registry (nemesis/registry.cc): its name, what `lockcheck list` says of it, its factory.
NemesisInfo delay_nemesis() {
  return {"delay", "latency + jitter on the links of a node, a client slot or all clients (modes node, client, all)",
          make_delay_nemesis};
}

}  // namespace lockcheck
