// Nemesis `client-pause`: the "GC pause" of Kleppmann's analysis. The lock holder stops, right after its
// acquire succeeded, for longer than the TTL (pause_ms: --pause-ms, 2 x TTL by default) and then carries on as if it still
// held the lock: a lock with a TTL cannot prevent that, a fencing token checked by the resource can.
// Start arms a pause (core/client_pauses.h) for client slots: random targeting one random slot (widened to
// every slot after half the period if it has not fired), holder
// targeting every slot (so the next process to acquire, the new holder, takes it at once). The first process of
// those slots to reach its pause point during the fault period pauses; the stop op disarms what did not fire
// and reports, in detail.paused, which process paused and for how long (a pause in progress runs to its end).
// Teardown ends every pause at once.
#include "core/client_pauses.h"
#include "core/party.h"
#include "nemesis/fault_util.h"

namespace lockcheck {

namespace {

using nlohmann::json;
namespace u = nemesis_util;

class ClientPause : public Nemesis {
 public:
  std::string name() const override { return "client-pause"; }
  // Lock-state timing: at an acquire's invoke. The pause is taken at the client's pause point, right after its
  // ok acquire (core/client_pauses.h), and lasts pause_ms (2 x TTL by default), so it spans that holder's expiry
  // whenever it is armed: what timing can add is that the arm is in place before the grant, so the acquire in
  // flight is the one that pauses. (A pause starting just before a holder's validity ends would need a pause
  // point inside the hold, which the workloads do not have.)
  TimingRule timing_rule(const FaultPlan&) const override {
    return {TimingTrigger::kAtAcquireInvoke, false, "client pause armed at an acquire's invoke: that holder pauses "
                                                    "right after its grant, across its expiry"};
  }
  // A client's own process: every cluster will do (holder targeting aims at the holder's client, not its nodes).
  std::vector<Ability> needs(bool) const override { return {}; }
  std::vector<DetailField> detail_fields() const override {
    return {{"pause_ms", DetailType::kNonNegative}, {"any_slot_after_ms", DetailType::kNonNegative}};
  }
  std::vector<std::string> run_settings() const override { return {"pause_ms"}; }

  FaultPlan plan(const PlanContext& ctx, std::mt19937_64& rng) const override {
    FaultPlan p;
    p.f = "client-pause";
    p.stop_f = "client-resume";
    p.duration_ms = ctx.interval_ms;
    if (!ctx.slots.empty()) p.targets = json::array({u::pick(ctx.slots, rng)});
    // If the drawn slot has not reached its pause point (taken the lock) within half the period, the first
    // process of any slot to do so pauses instead: a planned pause must take effect.
    p.detail = {{"pause_ms", ctx.pause_ms >= 0 ? ctx.pause_ms : 2 * ctx.ttl_ms}, {"any_slot_after_ms", ctx.interval_ms / 2}};
    return p;
  }

  void aim(NemesisEnv& env, FaultPlan& plan) const override {
    plan.targets = u::all_slots(env.options.concurrency);
    plan.detail["fires"] = "first to acquire";
  }

  Op invoke(NemesisEnv& env, const Op& op) override {
    const bool start = u::phase_of(op) == "start";
    if (!env.client_pauses) {
      return u::complete(op, OpType::kInfo, json::array(), u::detail_of(op), "no client pause hook in this run");
    }
    ClientPauses& pauses = *env.client_pauses;
    if (start) {
      json detail = u::detail_of(op);
      std::vector<int> slots;
      for (const auto& t : u::strings(op.value.value("targets", json::array()))) {
        const auto party = Party::parse(t);
        if (!party || !party->is_client()) {
          throw std::invalid_argument("client-pause: target '" + t + "' is not a client slot");
        }
        slots.push_back(static_cast<int>(party->index));
      }
      const int64_t pause_ms = detail.value("pause_ms", env.options.pause_ms >= 0 ? env.options.pause_ms : 2 * env.options.ttl_ms);
      std::optional<std::chrono::milliseconds> widen;
      if (detail.contains("any_slot_after_ms"))
        widen = std::chrono::milliseconds(detail["any_slot_after_ms"].get<int64_t>());
      const int64_t id = pauses.arm(slots, std::chrono::milliseconds(pause_ms), widen);
      detail["arm"] = id;
      return u::complete(op, OpType::kOk, op.value.value("targets", json::array()), detail);
    }
    pauses.disarm_all();
    json paused = json::array(), targets = json::array();
    for (const auto& f : pauses.fired(reported_)) {
      json p = {{"process", f.process}, {"slot", f.slot}, {"pause_ms", f.armed_for.count()}};
      if (f.lasted) p["lasted_ms"] = f.lasted->count();
      if (f.os_pid) p["sigstop_pid"] = *f.os_pid;  // an external client's process was stopped, not just its thread
      paused.push_back(p);
      targets.push_back(process_name(f.process));
      reported_ = std::max(reported_, f.arm_id);
    }
    return u::complete(op, OpType::kOk, targets, {{"paused", paused}});
  }

  void teardown(NemesisEnv& env) noexcept override {
    if (env.client_pauses) env.client_pauses->release_all();
  }

 private:
  int64_t reported_ = 0;
};

}  // namespace

std::unique_ptr<Nemesis> make_client_pause_nemesis() { return std::make_unique<ClientPause>(); }

// This nemesis's line in the registry (nemesis/registry.cc): its name, what `lockcheck list` says of it, its factory.
NemesisInfo client_pause_nemesis() {
  return {"client-pause", "the lock holder stops right after its acquire for 2x the TTL, then carries on (GC pause)",
          make_client_pause_nemesis};
}

}  // namespace lockcheck
