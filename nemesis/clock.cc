// Nemesis `clock`: moves the wall clock (CLOCK_REALTIME) of data nodes through Cluster::set_clock_offset (the
// clock shim in every local node). Redis key expiry follows the wall clock (FACTS.md): a forward jump past a
// key's deadline expires it at once, a backward one keeps it longer; the harness's own clock never moves.
// Modes:
//   bump    one jump of delta_ms (forward or back) on the target nodes, held until the stop op resets them
//   strobe  the target nodes' clocks flip between +delta_ms and the true time every period_ms, until stop
// The stop op (f "clock-reset") puts the targets back on the true time. delta is drawn in [ttl/4, 4 ttl] ms
// with a random sign; holder targeting jumps forward by at least 2 ttl the nodes that hold the current key
// (at least the planned number, and enough to take it from a majority: nemesis_util::aimed_count)
// (Kleppmann's first Redlock scenario: C's clock jumps and another client can take C).
// Teardown resets every node this nemesis touched.
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

  bool select_mode(const std::string& mode) override {
    if (std::find(clock_modes().begin(), clock_modes().end(), mode) == clock_modes().end()) return false;
    mode_ = mode;
    return true;
  }

  FaultPlan plan(const PlanContext& ctx, std::mt19937_64& rng) const override {
    const std::string mode = mode_.empty() ? u::pick(clock_modes(), rng) : mode_;
    static const std::vector<std::string> counts = {"one", "minority", "majority"};
    const std::string count = u::pick(counts, rng);
    FaultPlan p;
    p.f = mode == "bump" ? "clock-bump" : "clock-strobe";
    p.stop_f = "clock-reset";
    p.duration_ms = ctx.interval_ms;
    p.targets = u::pick_nodes(ctx.nodes, u::count_for(count, ctx.nodes.size()), rng);
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
    const int64_t delta = std::abs(plan.detail.value("delta_ms", int64_t{0}));
    plan.detail["delta_ms"] = std::max(delta, 2 * env.options.ttl_ms);
  }

  Op invoke(NemesisEnv& env, const Op& op) override {
    if (u::phase_of(op) == "start") {
      json detail = u::detail_of(op);
      const std::string mode = detail.value("mode", "bump");
      const auto delta = std::chrono::milliseconds(detail.value("delta_ms", int64_t{0}));
      std::vector<size_t> nodes;
      std::string error;
      json done = json::array();
      for (const auto& name : u::strings(op.value.value("targets", json::array()))) {
        try {
          const size_t n = u::node_index(env.cluster, name);
          env.cluster.set_clock_offset(n, delta);
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
  return {"clock", "jump node wall clocks by +-delta or flip them back and forth, then reset (modes bump, strobe)",
          make_clock_nemesis};
}

}  // namespace lockcheck
