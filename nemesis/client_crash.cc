// Nemesis `client-crash`: a client process dies at a chosen point of its lock ops without releasing
// (core/client_crashes.h): "mid-acquire" (setnx-expire: between SETNX and EXPIRE, so the lock never expires),
// "after-acquire" (the lock is held until its TTL) or "mid-release" (the release never reaches the node). Modes
// select the point (client-crash:mid-acquire); without one each fault draws it.
// Start arms one crash: random targeting for one random slot, holder targeting for every slot (the next process
// to get there crashes). A crash is a moment, not a period: the stop op reports, in detail.crashed, which process
// crashed where; an arm that has not fired by then is widened to every slot and stays armed until a process
// gets there (so a slot that happens not to acquire cannot make the fault silently miss), and the report says
// so (detail.pending). Teardown disarms everything. The crashed op ends info and its process is retired.
#include "core/client_pauses.h"
#include "core/party.h"
#include "nemesis/fault_util.h"

namespace lockcheck {

namespace {

using nlohmann::json;
namespace u = nemesis_util;

class ClientCrash : public Nemesis {
 public:
  std::string name() const override { return "client-crash"; }
  // Lock-state timing: mid-acquire at an acquire's invoke (the acquire in flight crashes between its steps);
  // after-acquire and mid-release while a lock is held (the holder's release, or the next grant, crashes).
  TimingRule timing_rule(const FaultPlan& plan) const override {
    if (plan.detail.value("point", "") == "mid-acquire") {
      return {TimingTrigger::kAtAcquireInvoke, false, "client crash mid-acquire at an acquire's invoke"};
    }
    return {TimingTrigger::kHeld, false, "client crash while a lock is held"};
  }
  // A client's own process: every cluster will do.
  std::vector<Ability> needs(bool) const override { return {}; }
  std::vector<DetailField> detail_fields() const override { return {{"point", DetailType::kString}}; }

  bool select_mode(const std::string& mode) override {
    const auto& points = crash_points();
    if (std::find(points.begin(), points.end(), mode) == points.end()) return false;
    mode_ = mode;
    return true;
  }

  FaultPlan plan(const PlanContext& ctx, std::mt19937_64& rng) const override {
    FaultPlan p;
    p.f = "client-crash";
    p.stop_f = "client-crash-report";
    p.duration_ms = ctx.interval_ms;
    if (!ctx.slots.empty()) p.targets = json::array({u::pick(ctx.slots, rng)});
    p.detail = {{"point", mode_.empty() ? u::pick(crash_points(), rng) : mode_}};
    return p;
  }

  void aim(NemesisEnv& env, FaultPlan& plan) const override {
    plan.targets = u::all_slots(env.options.concurrency);
    plan.detail["fires"] = "first to get there";
  }

  Op invoke(NemesisEnv& env, const Op& op) override {
    if (!env.client_pauses) {
      return u::complete(op, OpType::kInfo, json::array(), u::detail_of(op), "no client fault hook in this run");
    }
    ClientCrashes& crashes = env.client_pauses->crashes();
    if (u::phase_of(op) == "start") {
      json detail = u::detail_of(op);
      std::vector<int> slots;
      for (const auto& t : u::strings(op.value.value("targets", json::array()))) {
        const auto party = Party::parse(t);
        if (!party || !party->is_client()) {
          throw std::invalid_argument("client-crash: target '" + t + "' is not a client slot");
        }
        slots.push_back(static_cast<int>(party->index));
      }
      const std::string point = detail.value("point", "after-acquire");
      const int64_t id = crashes.arm(slots, point);
      pending_.push_back(id);
      detail["arm"] = id;
      return u::complete(op, OpType::kOk, op.value.value("targets", json::array()), detail);
    }
    json crashed = json::array(), targets = json::array(), pending = json::array();
    for (const auto& f : crashes.fired(reported_)) {
      crashed.push_back({{"process", f.process}, {"slot", f.slot}, {"point", f.point}});
      targets.push_back(process_name(f.process));
      reported_ = std::max(reported_, f.arm_id);
    }
    std::vector<int64_t> still;
    for (int64_t id : pending_) {
      if (crashes.widen(id)) {
        still.push_back(id);
        pending.push_back(id);
      }
    }
    pending_ = still;
    json detail = {{"crashed", crashed}};
    if (!pending.empty()) detail["pending"] = {{"arms", pending}, {"note", "not fired yet: widened to every slot"}};
    return u::complete(op, OpType::kOk, targets, detail);
  }

  void teardown(NemesisEnv& env) noexcept override {
    if (env.client_pauses) env.client_pauses->crashes().disarm_all();
  }

 private:
  std::string mode_;
  int64_t reported_ = 0;
  std::vector<int64_t> pending_;  // arms started and not seen fired
};

}  // namespace

std::unique_ptr<Nemesis> make_client_crash_nemesis() { return std::make_unique<ClientCrash>(); }

// This nemesis's line in the registry (nemesis/registry.cc): its name, what `lockcheck list` says of it, its factory.
NemesisInfo client_crash_nemesis() {
  return {"client-crash",
          "a client process dies without releasing (modes mid-acquire: between SETNX and EXPIRE, after-acquire, "
          "mid-release); its op ends info",
          make_client_crash_nemesis};
}

}  // namespace lockcheck
