// Nemesis `partition`: cuts links between parties (data nodes "n1".., Sentinels "s1".., client slots "c0"..)
// through Cluster::cut, so that bytes are held, not refused (an iptables DROP). Modes:
//   isolate       one node is cut from every other party
//   halves        nodes split into two halves; every Sentinel and client slot joins one side; cross links cut
//   majority-ring nodes on a shuffled ring each see themselves and their neighbours (a majority, but no two
//                 the same: non-transitive); a Sentinel or client slot sees what its home node sees
//   bridge        two halves joined by one bridge node that sees both (non-transitive)
//   client-cut    one client slot loses a minority of the nodes; everyone else sees all
//   client-split  Kleppmann's shape: client slots split in two groups; one reaches nodes A,B,C, the other
//                 C,D,E (each loses (N-1)/2 nodes, the middle is shared)
// The links to cut are drawn at plan time and carried in detail.links, so invoke applies exactly the plan.
// Holder targeting re-aims isolate at a node that holds the current lock key, and client-cut / client-split
// at the current holder's client slot (alone in its group).
// Stop heals the links this nemesis cut (a delay another nemesis set on them stays).
#include <map>
#include <set>

#include "core/party.h"
#include "nemesis/fault_util.h"
#include "nemesis/holders.h"
#include "nemesis/link_faults.h"

namespace lockcheck {

namespace {

using nlohmann::json;
namespace u = nemesis_util;

const std::vector<std::string>& partition_modes() {
  static const std::vector<std::string> m = {"isolate", "halves",     "majority-ring",
                                             "bridge",  "client-cut", "client-split"};
  return m;
}

bool is_slot(const std::string& p) {
  const auto party = Party::parse(p);
  return party && party->is_client();
}

// Every link between two parties that may talk: anything but client slot <-> client slot.
std::vector<std::pair<std::string, std::string>> all_links(const PlanContext& ctx) {
  std::vector<std::string> parties = ctx.nodes;
  parties.insert(parties.end(), ctx.sentinels.begin(), ctx.sentinels.end());
  parties.insert(parties.end(), ctx.slots.begin(), ctx.slots.end());
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 0; i < parties.size(); ++i) {
    for (size_t j = i + 1; j < parties.size(); ++j) {
      if (is_slot(parties[i]) && is_slot(parties[j])) continue;
      out.emplace_back(parties[i], parties[j]);
    }
  }
  return out;
}

struct Grudge {
  std::vector<std::pair<std::string, std::string>> links;
  json info = json::object();
};

// Side 0 or 1 for each party; cross links are cut. Parties absent from side (a bridge node) see everyone.
Grudge cut_across(const PlanContext& ctx, const std::map<std::string, int>& side) {
  Grudge g;
  for (const auto& l : all_links(ctx)) {
    auto a = side.find(l.first), b = side.find(l.second);
    if (a != side.end() && b != side.end() && a->second != b->second) g.links.push_back(l);
  }
  json sides = json::array({json::array(), json::array()});
  for (const auto& kv : side) sides[kv.second].push_back(kv.first);
  g.info["sides"] = sides;
  return g;
}

std::vector<std::string> others(const PlanContext& ctx) {
  std::vector<std::string> v = ctx.sentinels;
  v.insert(v.end(), ctx.slots.begin(), ctx.slots.end());
  return v;
}

Grudge isolate(const PlanContext& ctx, const std::string& victim) {
  Grudge g;
  for (const auto& l : all_links(ctx)) {
    if (l.first == victim || l.second == victim) g.links.push_back(l);
  }
  g.info["isolated"] = victim;
  return g;
}

Grudge halves(const PlanContext& ctx, std::mt19937_64& rng) {
  std::vector<std::string> nodes = ctx.nodes;
  u::shuffle(nodes, rng);
  std::map<std::string, int> side;
  for (size_t i = 0; i < nodes.size(); ++i) side[nodes[i]] = i < nodes.size() / 2 ? 0 : 1;
  for (const auto& p : others(ctx)) side[p] = static_cast<int>(uniform(rng, 0, 1));
  return cut_across(ctx, side);
}

Grudge bridge(const PlanContext& ctx, std::mt19937_64& rng) {
  std::vector<std::string> nodes = ctx.nodes;
  u::shuffle(nodes, rng);
  std::map<std::string, int> side;
  const size_t a = (nodes.size() - 1) / 2;  // nodes[a] is the bridge
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i != a) side[nodes[i]] = i < a ? 0 : 1;
  }
  for (const auto& p : others(ctx)) side[p] = static_cast<int>(uniform(rng, 0, 1));
  Grudge g = cut_across(ctx, side);
  g.info["bridge"] = nodes.empty() ? "" : nodes[a];
  return g;
}

Grudge majority_ring(const PlanContext& ctx, std::mt19937_64& rng) {
  std::vector<std::string> ring = ctx.nodes;
  u::shuffle(ring, rng);
  const size_t n = ring.size();
  const size_t majority = n / 2 + 1;
  const size_t radius = majority / 2;  // sees 2*radius+1 >= majority nodes
  std::map<std::string, size_t> home;
  for (size_t i = 0; i < n; ++i) home[ring[i]] = i;
  json homes = json::object();
  for (const auto& p : others(ctx)) {
    home[p] = static_cast<size_t>(uniform(rng, 0, static_cast<int64_t>(n) - 1));
    homes[p] = ring[home[p]];
  }
  auto dist = [&](size_t i, size_t j) {
    const size_t d = i > j ? i - j : j - i;
    return std::min(d, n - d);
  };
  Grudge g;
  for (const auto& l : all_links(ctx)) {
    if (dist(home[l.first], home[l.second]) > radius) g.links.push_back(l);
  }
  g.info["ring"] = ring;
  g.info["homes"] = homes;
  return g;
}

Grudge client_cut(const PlanContext& ctx, const std::string& slot, std::mt19937_64& rng) {
  const size_t k = std::max<size_t>(1, (ctx.nodes.size() - 1) / 2);
  Grudge g;
  for (const auto& n : u::pick_nodes(ctx.nodes, k, rng)) g.links.emplace_back(slot, n);
  g.info["slot"] = slot;
  return g;
}

// group_x reaches the first N - m nodes of order, everyone else the last N - m.
Grudge client_split(const PlanContext& ctx, const std::set<std::string>& group_x, std::vector<std::string> order) {
  const size_t n = order.size();
  const size_t m = (n - 1) / 2;
  Grudge g;
  json x = json::array(), y = json::array();
  for (const auto& s : ctx.slots) {
    const bool in_x = group_x.count(s) > 0;
    (in_x ? x : y).push_back(s);
    for (size_t i = 0; i < m; ++i) g.links.emplace_back(s, in_x ? order[n - 1 - i] : order[i]);
  }
  g.info["groups"] = json::array({x, y});
  g.info["reach"] = json::array({json(std::vector<std::string>(order.begin(), order.end() - static_cast<long>(m))),
                                 json(std::vector<std::string>(order.begin() + static_cast<long>(m), order.end()))});
  return g;
}

json targets_of(const Grudge& g) {
  std::set<std::string> t;
  for (const auto& l : g.links) {
    t.insert(l.first);
    t.insert(l.second);
  }
  std::vector<std::string> v(t.begin(), t.end());
  std::sort(v.begin(), v.end(), u::party_less);
  return v;
}

class Partition : public Nemesis {
 public:
  std::string name() const override { return "partition"; }
  // Lock-state timing: at a grant, so the holder's nodes (or its client) are cut while its fresh lock is live.
  TimingRule timing_rule(const FaultPlan&) const override {
    return {TimingTrigger::kAtGrant, false, "partition at a grant"};
  }
  std::vector<DetailField> detail_fields() const override { return {{"links", DetailType::kLinks}}; }
  // The client modes cut client links only (the fault proxy, on every backend); the others cut servers from each
  // other, and isolate aims at a node that holds the holder's key.
  std::vector<Ability> needs(bool holder_targeting) const override {
    const bool clients_only = mode_ == "client-cut" || mode_ == "client-split";
    std::vector<Ability> out;
    if (!clients_only) out.push_back(Ability::kCutPeers);
    if (holder_targeting && (mode_.empty() || mode_ == "isolate")) out.push_back(Ability::kKeyHolders);
    return out;
  }

  bool select_mode(const std::string& mode) override {
    if (std::find(partition_modes().begin(), partition_modes().end(), mode) == partition_modes().end()) return false;
    mode_ = mode;
    return true;
  }

  FaultPlan plan(const PlanContext& ctx, std::mt19937_64& rng) const override {
    std::string mode = mode_.empty() ? u::pick(partition_modes(), rng) : mode_;
    if ((mode == "client-cut" || mode == "client-split") && ctx.slots.empty()) mode = "isolate";
    if (mode == "client-split" && ctx.slots.size() < 2) mode = "client-cut";
    Grudge g;
    if (mode == "isolate") {
      g = isolate(ctx, u::pick(ctx.nodes, rng));
    } else if (mode == "halves") {
      g = halves(ctx, rng);
    } else if (mode == "majority-ring") {
      g = majority_ring(ctx, rng);
    } else if (mode == "bridge") {
      g = bridge(ctx, rng);
    } else if (mode == "client-cut") {
      g = client_cut(ctx, u::pick(ctx.slots, rng), rng);
    } else {
      std::vector<std::string> slots = ctx.slots;
      u::shuffle(slots, rng);
      const size_t nx = static_cast<size_t>(uniform(rng, 1, static_cast<int64_t>(slots.size()) - 1));
      std::vector<std::string> order = ctx.nodes;
      u::shuffle(order, rng);
      g = client_split(ctx, std::set<std::string>(slots.begin(), slots.begin() + static_cast<long>(nx)), order);
    }
    return make_plan(ctx, mode, g);
  }

  void aim(NemesisEnv& env, FaultPlan& plan) const override {
    if (!env.holders) return;
    const std::string mode = plan.detail.value("mode", "");
    auto held = env.holders->current();
    if (held.empty()) return mark_not_aimed(plan.detail, "no lock was held when the fault started");
    const Holding& h = held.back();
    const PlanContext ctx = context(env);
    nlohmann::json holder_nodes;
    std::mt19937_64 rng(static_cast<uint64_t>(plan.detail.value("step", 0)) + 1);
    const std::string slot = slot_of(h.process, env.options.concurrency);
    Grudge g;
    if (mode == "isolate") {
      const HolderNodes found = find_holder_nodes(env.cluster, h);
      holder_nodes = found.to_json(env.cluster);
      if (found.nodes.empty()) {
        plan.detail["aimed_at"] = {{"process", h.process}, {"key", h.key}};
        plan.detail["holder_nodes"] = holder_nodes;
        return mark_not_aimed(plan.detail, found.why_none());
      }
      g = isolate(ctx, env.cluster.nodes()[found.nodes.front()].name);
    } else if (mode == "client-cut") {
      g = client_cut(ctx, slot, rng);
    } else if (mode == "client-split") {
      std::vector<std::string> order = ctx.nodes;
      u::shuffle(order, rng);
      g = client_split(ctx, {slot}, order);
    } else {
      return mark_not_aimed(plan.detail, "mode " + mode + " is not aimed at a holder");
    }
    plan = make_plan(ctx, mode, g);
    plan.detail["aimed_at"] = {{"process", h.process}, {"key", h.key}};
    if (!holder_nodes.is_null()) plan.detail["holder_nodes"] = holder_nodes;
  }

  Op invoke(NemesisEnv& env, const Op& op) override {
    LinkFaults& links = env.links ? *env.links : own_links_;
    if (u::phase_of(op) == "start") {
      json detail = u::detail_of(op);
      std::string error;
      std::vector<LinkFaults::Pair> pairs;
      for (const auto& l : detail.value("links", json::array())) {
        pairs.emplace_back(l.at(0).get<std::string>(), l.at(1).get<std::string>());
      }
      try {
        links.cut_many(env.cluster, name(), pairs);  // one fault, one bounded wait
      } catch (const ClusterError& e) {
        error = e.what();
      }
      return u::complete(op, error.empty() ? OpType::kOk : OpType::kInfo, op.value.value("targets", json::array()),
                         detail, error);
    }
    return u::heal_owned_links(links, env.cluster, name(), op);
  }

  void teardown(NemesisEnv& env) noexcept override {
    u::teardown_owned_links(env.links ? *env.links : own_links_, env.cluster, name());
  }

 private:
  static PlanContext context(NemesisEnv& env) {
    std::vector<std::string> nodes, sentinels;
    for (const auto& n : env.cluster.nodes()) nodes.push_back(n.name);
    for (const auto& s : env.cluster.sentinels()) sentinels.push_back(s.name);
    return PlanContext::from(env.options, nodes, sentinels);
  }

  FaultPlan make_plan(const PlanContext& ctx, const std::string& mode, const Grudge& g) const {
    FaultPlan p;
    p.f = "partition";
    p.stop_f = "heal";
    p.duration_ms = ctx.interval_ms;
    p.targets = targets_of(g);
    p.detail = g.info;
    p.detail["mode"] = mode;
    json links = json::array();
    for (const auto& l : g.links) links.push_back({l.first, l.second});
    p.detail["links"] = links;
    return p;
  }

  std::string mode_;
  LinkFaults own_links_;
};

}  // namespace

std::unique_ptr<Nemesis> make_partition_nemesis() { return std::make_unique<Partition>(); }

// This nemesis's line in the registry (nemesis/registry.cc): its name, what `lockcheck list` says of it, its factory.
NemesisInfo partition_nemesis() {
  return {"partition", "cut links (modes isolate, halves, majority-ring, bridge, client-cut, client-split), then heal",
          make_partition_nemesis};
}

}  // namespace lockcheck
