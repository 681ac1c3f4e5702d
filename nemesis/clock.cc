// Nemesis `clock`: moves the wall clock (CLOCK_REALTIME) of data nodes through Cluster::set_clock_offset (the
// clock shim in every local node). Redis key expiry follows the wall clock (FACTS.md): a forward jump past a
// key's deadline expires it at once, a backward one keeps it longer; the harness's own clock never moves.
// Modes:
//   bump    one jump of delta_ms (forward or back) on the target nodes, held until the stop op resets them
//   strobe  the target nodes' clocks flip between +delta_ms and the true time every period_ms, until stop
//   drift   the target nodes' clocks run at 1 + rate_ppm / 10^6 of the real rate from the start to the stop,
//           without a jump (the clock shim's rate): the Redlock article's one timing assumption ("local time flows
//           at about the same rate") broken. Only as clock:drift (plain `clock` draws bump or strobe, as the
//           schedules of stored seeds always did).
// The stop op (f "clock-reset") puts bump and strobe targets back on the true time. A drift's stop (f
// "clock-drift-stop") puts the rate back to 1 and keeps the shift the drift built up, so that no clock ever
// jumps because of a drift (a reset would be a jump: forward after a slow clock); its detail says what shift
// each node was left with; the teardown at the end of the run resets them. delta is drawn in [ttl/4, 4 ttl] ms
// with a random sign; the drift rate is --drift-ppm, else drawn per fault log-uniform in 0.1%-30% with a random
// sign. Holder targeting aims at the nodes that hold the current key (at least the planned number, and enough
// to take it from a majority: nemesis_util::aimed_count): a bump jumps them forward by at least 2 ttl
// (Kleppmann's first Redlock scenario: C's clock jumps and another client can take C), a drawn drift runs them
// fast (a fast node clock ends a lock early; a given --drift-ppm is kept as it is).
// Teardown resets every node this nemesis touched.
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "nemesis/fault_util.h"
#include "nemesis/holders.h"

namespace lockcheck {

namespace {

using nlohmann::json;
namespace u = nemesis_util;

const std::vector<std::string>& clock_modes() {
  static const std::vector<std::string> m = {"bump", "strobe"};
  return m;
}

class Clock : public Nemesis {
 public:
  ~Clock() override { stop_strobe(); }

  std::string name() const override { return "clock"; }
  // Lock-state timing: right at a grant (an acquire's ok), so the jump or drift hits the nodes (with holder
  // targeting: the holder's majority, aim) while the fresh lock's TTL runs on their clocks (Kleppmann's first
  // Redlock scenario).
  TimingRule timing_rule(const FaultPlan&) const override {
    return {TimingTrigger::kAtGrant, false, "clock bump or drift right at a grant"};
  }
  std::vector<DetailField> detail_fields() const override {
    return {{"delta_ms", DetailType::kInteger},
            {"rate_ppm", DetailType::kInteger},
            {"drawn", DetailType::kBool},
            {"period_ms", DetailType::kNonNegative}};
  }
  std::vector<std::string> run_settings() const override {
    return mode_ == "drift" ? std::vector<std::string>{"drift_ppm"} : std::vector<std::string>{};
  }

  std::vector<Ability> needs(bool holder_targeting) const override {
    std::vector<Ability> out = {mode_ == "drift" ? Ability::kClockRate : Ability::kClockStep};
    if (holder_targeting) out.push_back(Ability::kKeyHolders);
    return out;
  }

  bool select_mode(const std::string& mode) override {
    if (mode != "drift" &&
        std::find(clock_modes().begin(), clock_modes().end(), mode) == clock_modes().end()) {
      return false;
    }
    mode_ = mode;
    return true;
  }

  FaultPlan plan(const PlanContext& ctx, std::mt19937_64& rng) const override {
    const std::string mode = mode_.empty() ? u::pick(clock_modes(), rng) : mode_;
    static const std::vector<std::string> counts = {"one", "minority", "majority"};
    const std::string count = u::pick(counts, rng);
    FaultPlan p;
    p.duration_ms = ctx.interval_ms;
    p.targets = u::pick_nodes(ctx.nodes, u::count_for(count, ctx.nodes.size()), rng);
    if (mode == "drift") {
      p.f = "clock-drift";
      p.stop_f = "clock-drift-stop";
      int64_t ppm = ctx.drift_ppm;
      if (ppm == 0) {
        // log-uniform in [1000, 300000] ppm (0.1% to 30%), either sign
        const double x = std::uniform_real_distribution<double>(std::log(1000.0), std::log(300000.0))(rng);
        ppm = static_cast<int64_t>(std::llround(std::exp(x)));
        if (uniform(rng, 0, 1) == 1) ppm = -ppm;
        p.detail = {{"mode", mode}, {"rate_ppm", ppm}, {"drawn", true}};
      } else {
        p.detail = {{"mode", mode}, {"rate_ppm", ppm}};
      }
      return p;
    }
    p.f = mode == "bump" ? "clock-bump" : "clock-strobe";
    p.stop_f = "clock-reset";
    const int64_t magnitude = uniform(rng, std::max<int64_t>(1, ctx.ttl_ms / 4), 4 * ctx.ttl_ms);
    const int64_t delta = uniform(rng, 0, 1) == 0 ? magnitude : -magnitude;
    p.detail = {{"mode", mode}, {"delta_ms", delta}};
    if (mode == "strobe") {
      p.detail["period_ms"] =
          uniform(rng, std::max<int64_t>(5, ctx.ttl_ms / 50), std::max<int64_t>(10, ctx.ttl_ms / 5));
    }
    return p;
  }

  void aim(NemesisEnv& env, FaultPlan& plan) const override {
    if (!env.holders) return;
    auto held = env.holders->current();
    if (held.empty()) return mark_not_aimed(plan.detail, "no lock was held when the fault started");
    const Holding& h = held.back();
    const auto& nodes = env.cluster.nodes();
    const HolderNodes found = find_holder_nodes(env.cluster, h);
    plan.detail["aimed_at"] = {{"process", h.process}, {"key", h.key}};
    plan.detail["holder_nodes"] = found.to_json(env.cluster);
    if (found.nodes.empty()) return mark_not_aimed(plan.detail, found.why_none());
    const auto& holding = found.nodes;
    const size_t k =
        std::max(plan.targets.size(), nemesis_util::aimed_count(plan.targets.size(), holding.size(), nodes.size()));
    std::vector<std::string> chosen;
    for (size_t n : holding) {
      if (chosen.size() < k) chosen.push_back(nodes[n].name);
    }
    std::sort(chosen.begin(), chosen.end(), u::party_less);
    plan.targets = chosen;
    if (plan.detail.value("mode", "") == "drift") {
      if (plan.detail.value("drawn", false)) plan.detail["rate_ppm"] = std::abs(plan.detail.value("rate_ppm", int64_t{0}));
      return;
    }
    const int64_t delta = std::abs(plan.detail.value("delta_ms", int64_t{0}));
    plan.detail["delta_ms"] = std::max(delta, 2 * env.options.ttl_ms);
  }

  Op invoke(NemesisEnv& env, const Op& op) override {
    if (u::phase_of(op) == "start") {
      json detail = u::detail_of(op);
      const std::string mode = detail.value("mode", "bump");
      const auto delta = std::chrono::milliseconds(detail.value("delta_ms", int64_t{0}));
      const int64_t rate_ppb = detail.value("rate_ppm", int64_t{0}) * 1000;
      std::vector<size_t> nodes;
      std::string error;
      json done = json::array();
      for (const auto& name : u::strings(op.value.value("targets", json::array()))) {
        try {
          const size_t n = u::node_index(env.cluster, name);
          if (mode == "drift") {
            env.cluster.set_clock_rate(n, rate_ppb);
            drifting_.insert(n);
          } else {
            env.cluster.set_clock_offset(n, delta);
          }
          touched_.insert(n);
          nodes.push_back(n);
          done.push_back(name);
        } catch (const std::exception& e) {
          if (error.empty()) error = name + ": " + e.what();
        }
      }
      if (mode == "strobe" && !nodes.empty()) {
        const auto period = std::chrono::milliseconds(std::max<int64_t>(1, detail.value("period_ms", 50)));
        start_strobe(env.cluster, nodes, delta, period);
      }
      return u::complete(op, error.empty() ? OpType::kOk : OpType::kInfo, done, detail, error);
    }
    if (!drifting_.empty() || op.f == "clock-drift-stop") return stop_drift(env, op);
    json flips = stop_strobe();
    json done = json::array();
    std::string error;
    for (size_t n : std::set<size_t>(touched_)) {
      try {
        env.cluster.set_clock_offset(n, std::chrono::nanoseconds(0));
        touched_.erase(n);
        done.push_back(env.cluster.nodes()[n].name);
      } catch (const std::exception& e) {
        if (error.empty()) error = e.what();
      }
    }
    json detail = json::object();
    if (!flips.is_null()) detail["strobe_flips"] = flips;
    return u::complete(op, error.empty() ? OpType::kOk : OpType::kInfo, done, detail, error);
  }

  void teardown(NemesisEnv& env) noexcept override {
    stop_strobe();
    drifting_.clear();
    for (size_t n : touched_) {
      try {
        env.cluster.set_clock_offset(n, std::chrono::nanoseconds(0));
      } catch (...) {
        // Cluster::stop() resets every clock file too.
      }
    }
    touched_.clear();
  }

 private:
  // A drift's stop: every drifting node back on the real rate, keeping the shift it built up (no jump); the
  // shift each was left with goes into the detail. They stay in touched_: the teardown resets them.
  Op stop_drift(NemesisEnv& env, const Op& op) {
    json done = json::array();
    json left = json::object();
    std::string error;
    for (size_t n : std::set<size_t>(drifting_)) {
      const std::string& name = env.cluster.nodes()[n].name;
      try {
        env.cluster.set_clock_rate(n, 0);
        drifting_.erase(n);
        done.push_back(name);
        if (const auto shift = env.cluster.clock_shift(n)) {
          left[name] = static_cast<double>(shift->count() / 1000) / 1000.0;  // ms, to the microsecond
        }
      } catch (const std::exception& e) {
        if (error.empty()) error = name + ": " + e.what();
      }
    }
    json detail = json::object();
    if (!left.empty()) detail["left_shift_ms"] = left;
    return u::complete(op, error.empty() ? OpType::kOk : OpType::kInfo, done, detail, error);
  }

  void start_strobe(Cluster& cluster, std::vector<size_t> nodes, std::chrono::milliseconds delta,
                    std::chrono::milliseconds period) {
    stop_strobe();
    strobing_ = true;
    flips_ = 0;
    strobe_ = std::thread([this, &cluster, nodes, delta, period] {
      bool shifted = true;  // invoke already applied +delta
      std::unique_lock<std::mutex> lock(mu_);
      while (!cv_.wait_for(lock, period, [this] { return !strobing_; })) {
        shifted = !shifted;
        for (size_t n : nodes) {
          try {
            cluster.set_clock_offset(n, shifted ? std::chrono::nanoseconds(delta) : std::chrono::nanoseconds(0));
          } catch (...) {
            // A node down for another fault: its clock file stays; the stop op resets it.
          }
        }
        ++flips_;
      }
    });
  }

  // Stops the strobe thread if one runs; returns its number of flips (null when none ran).
  json stop_strobe() noexcept {
    if (!strobe_.joinable()) return nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      strobing_ = false;
    }
    cv_.notify_all();
    strobe_.join();
    return flips_;
  }

  std::string mode_;
  std::set<size_t> touched_;
  std::set<size_t> drifting_;  // nodes whose clock runs at a rate of this nemesis's
  std::mutex mu_;
  std::condition_variable cv_;
  bool strobing_ = false;
  int64_t flips_ = 0;
  std::thread strobe_;
};

}  // namespace

std::unique_ptr<Nemesis> make_clock_nemesis() { return std::make_unique<Clock>(); }

// This nemesis's line in the registry (nemesis/registry.cc): its name, what `lockcheck list` says of it, its factory.
NemesisInfo clock_nemesis() {
  return {"clock",
          "jump node wall clocks by +-delta or flip them back and forth, then reset (modes bump, strobe); "
          "clock:drift runs them fast or slow (--drift-ppm) without a jump",
          make_clock_nemesis};
}

}  // namespace lockcheck
