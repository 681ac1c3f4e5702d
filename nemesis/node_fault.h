// The common part of the nemeses that act on whole data nodes (pause, kill): which nodes. Modes are counts:
// one, minority, majority, all (nemesis_util::count_for); the nodes are drawn at plan time. Holder targeting
// re-aims at the nodes that hold the current holder's key: at least the planned number, and enough of them to
// take the key from a majority (nemesis_util::aimed_count), filled up with planned nodes when fewer hold it. The
// holder's nodes are found by the keys its client reported, else by the request's key (find_holder_nodes); the
// detail records which ("holder_nodes"), and when none was found the planned nodes stay and the fault says
// "aimed": false with the reason.
// Two more modes aim at the leader (Cluster::leader(), etcd's member its peers name) when the fault starts:
// leader, and leader-or-all (either, drawn per fault: the targets of Jepsen's etcd pause and kill nemeses,
// "primaries" or all). The planned target is a random node, kept (with "aimed": false and why) when the cluster
// names no leader at that moment; the detail records the leader found.
// A subclass applies and undoes the fault on node indices and says how long the fault lasts.
#pragma once

#include <mutex>
#include <set>

#include "nemesis/fault_util.h"
#include "nemesis/holders.h"

namespace lockcheck {

class NodeFault : public Nemesis {
 public:
  std::vector<Ability> needs(bool holder_targeting) const override {
    std::vector<Ability> out = {fault_ability()};
    if (mode_ == "leader" || mode_ == "leader-or-all") out.push_back(Ability::kLeader);
    if (holder_targeting) out.push_back(Ability::kKeyHolders);
    return out;
  }

  bool select_mode(const std::string& mode) override {
    const auto& m = nemesis_util::count_modes();
    if (std::find(m.begin(), m.end(), mode) == m.end() && mode != "leader" && mode != "leader-or-all") return false;
    mode_ = mode;
    return true;
  }

  FaultPlan plan(const PlanContext& ctx, std::mt19937_64& rng) const override {
    std::string mode = mode_.empty() ? nemesis_util::pick(nemesis_util::count_modes(), rng) : mode_;
    if (mode == "leader-or-all") mode = nemesis_util::pick(std::vector<std::string>{"leader", "all"}, rng);
    FaultPlan p;
    p.f = start_f();
    p.stop_f = stop_f();
    p.duration_ms = duration_ms(ctx);
    const size_t count = mode == "leader" ? 1 : nemesis_util::count_for(mode, ctx.nodes.size());
    p.targets = nemesis_util::pick_nodes(ctx.nodes, count, rng);
    if (ctx.nodes.size() == 1 && mode != "leader") mode = "all";  // one node: every mode takes it ("minority" misreads)
    p.detail = {{"mode", mode}};
    add_detail(ctx, p.detail);
    return p;
  }

  void aim(NemesisEnv& env, FaultPlan& plan) const override {
    if (!env.holders) return;
    auto held = env.holders->current();
    if (held.empty()) return mark_not_aimed(plan.detail, "no lock was held when the fault started");
    const Holding& h = held.back();
    const auto& nodes = env.cluster.nodes();
    const HolderNodes found = find_holder_nodes(env.cluster, h);  // needs() asked for key holders
    plan.detail["aimed_at"] = {{"process", h.process}, {"key", h.key}};
    plan.detail["holder_nodes"] = found.to_json(env.cluster);
    // Nothing found: the planned (random) nodes stay, and the fault says it was not aimed.
    if (found.nodes.empty()) return mark_not_aimed(plan.detail, found.why_none());
    const auto& holding = found.nodes;
    const size_t k =
        std::max(plan.targets.size(), nemesis_util::aimed_count(plan.targets.size(), holding.size(), nodes.size()));
    std::vector<std::string> chosen;
    for (size_t n : holding) {
      if (chosen.size() < k) chosen.push_back(nodes[n].name);
    }
    for (const auto& t : nemesis_util::strings(plan.targets)) {  // fill up with the planned ones
      if (chosen.size() < k && std::find(chosen.begin(), chosen.end(), t) == chosen.end()) chosen.push_back(t);
    }
    std::sort(chosen.begin(), chosen.end(), nemesis_util::party_less);
    plan.targets = chosen;
  }

  Op invoke(NemesisEnv& env, const Op& op) override {
    std::lock_guard<std::mutex> lock(mu_);
    const bool start = nemesis_util::phase_of(op) == "start";
    std::vector<std::string> names = start ? nemesis_util::strings(op.value.value("targets", nlohmann::json::array()))
                                           : std::vector<std::string>(in_force_.begin(), in_force_.end());
    nlohmann::json detail = start ? nemesis_util::detail_of(op) : nlohmann::json::object();
    if (start && detail.value("mode", "") == "leader") {
      // The leader at this moment (the planned node stays when there is none).
      const std::optional<size_t> leader = env.cluster.leader();
      if (leader) {
        names = {env.cluster.nodes()[*leader].name};
        detail["leader"] = names.front();
      } else {
        mark_not_aimed(detail, "the cluster named no leader when the fault started");
      }
    }
    std::sort(names.begin(), names.end(), nemesis_util::party_less);
    std::string error;
    nlohmann::json done = nlohmann::json::array();
    nlohmann::json said = nlohmann::json::object();
    for (const auto& name : names) {
      try {
        const size_t n = nemesis_util::node_index(env.cluster, name);
        if (start) {
          nlohmann::json what = apply_and_say(env, n);
          if (!what.is_null()) said[name] = std::move(what);
          in_force_.insert(name);
        } else {
          undo(env, n);
          in_force_.erase(name);
        }
        done.push_back(name);
      } catch (const std::exception& e) {
        if (error.empty()) error = name + ": " + e.what();
      }
    }
    if (!said.empty()) detail[said_key()] = said;
    return nemesis_util::complete(op, error.empty() ? OpType::kOk : OpType::kInfo, done, detail, error);
  }

  void teardown(NemesisEnv& env) noexcept override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& name : in_force_) {
      try {
        teardown_node(env, nemesis_util::node_index(env.cluster, name));
      } catch (...) {
        // The cluster's stop() sends SIGCONT and SIGKILL to every node anyway.
      }
    }
    in_force_.clear();
  }

 protected:
  virtual std::string start_f() const = 0;
  virtual std::string stop_f() const = 0;
  // The ability the fault itself needs (kill, pause, power loss).
  virtual Ability fault_ability() const = 0;
  virtual int64_t duration_ms(const PlanContext& ctx) const { return ctx.interval_ms; }
  virtual void add_detail(const PlanContext& ctx, nlohmann::json& detail) const { (void)ctx, (void)detail; }
  virtual void apply(NemesisEnv& env, size_t n) = 0;
  // apply, and what it measured on node n (null: nothing), recorded in the start op's detail under said_key(),
  // by node name: what happened, as the backend measured it, never what was planned.
  virtual nlohmann::json apply_and_say(NemesisEnv& env, size_t n) {
    apply(env, n);
    return nullptr;
  }
  virtual std::string said_key() const { return "applied"; }
  virtual void undo(NemesisEnv& env, size_t n) = 0;
  // What teardown does for a node still faulted (default: undo).
  virtual void teardown_node(NemesisEnv& env, size_t n) { undo(env, n); }

 private:
  std::string mode_;
  std::mutex mu_;
  std::set<std::string> in_force_;
};

// The node faults that take nodes down and start them again after --restart-delay-ms (kill, power-loss): the
// fault period is the time the nodes are down, its stop op the restart. Teardown does not restart a node still
// down: Cluster::stop() ends the run with every node down anyway. A subclass says how a node goes down.
class RestartFault : public NodeFault {
 protected:
  std::string stop_f() const override { return "restart"; }
  int64_t duration_ms(const PlanContext& ctx) const override { return ctx.restart_delay_ms; }
  std::vector<std::string> run_settings() const override { return {"restart_delay_ms"}; }
  void add_detail(const PlanContext& ctx, nlohmann::json& detail) const override {
    detail["restart_delay_ms"] = ctx.restart_delay_ms;
  }
  void undo(NemesisEnv& env, size_t n) override { env.cluster.restart(n); }
  void teardown_node(NemesisEnv& env, size_t n) override { (void)env, (void)n; }
};

}  // namespace lockcheck
