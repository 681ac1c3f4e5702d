#include "nemesis/schedule.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "core/party.h"
#include "core/random.h"

namespace lockcheck {

const char* to_string(Phase p) { return p == Phase::kStart ? "start" : "stop"; }

NemesisOptions NemesisOptions::from(const RunConfig& c) {
  NemesisOptions o;
  o.concurrency = c.concurrency;
  o.ttl_ms = c.ttl_ms;
  o.topology = c.topology;
  o.interval_ms = std::max<int64_t>(1, static_cast<int64_t>(std::llround(c.nemesis_interval_s * 1000)));
  o.restart_delay_ms = c.restart_delay_ms;
  o.hold_ms_max = c.effective_hold_ms_max();
  o.op_timeout_ms = c.op_timeout_ms;
  return o;
}

PlanContext PlanContext::from(const NemesisOptions& o, const std::vector<std::string>& node_names,
                              const std::vector<std::string>& sentinel_names) {
  PlanContext ctx;
  ctx.nodes = node_names;
  ctx.sentinels = sentinel_names;
  for (int s = 0; s < o.concurrency; ++s) ctx.slots.push_back(Party::client(static_cast<size_t>(s)).name());
  ctx.topology = o.topology;
  ctx.ttl_ms = o.ttl_ms;
  ctx.interval_ms = o.interval_ms;
  ctx.restart_delay_ms = o.restart_delay_ms;
  return ctx;
}

Schedule make_schedule(const RunConfig& cfg, const PlanContext& ctx,
                       const std::vector<std::unique_ptr<Nemesis>>& nemeses) {
  if (nemeses.size() != cfg.nemesis.size()) throw std::invalid_argument("make_schedule: one nemesis per name");
  Schedule s;
  s.seed = cfg.seed;
  s.targeting = cfg.nemesis_targeting;
  s.interval_s = cfg.nemesis_interval_s;
  s.time_limit_s = cfg.time_limit_s;
  s.nemesis = cfg.nemesis;
  const int64_t limit_ms = static_cast<int64_t>(std::llround(cfg.time_limit_s * 1000));
  const int64_t interval = ctx.interval_ms;
  std::vector<ScheduleEntry> all;
  for (size_t k = 0; k < nemeses.size(); ++k) {
    if (!nemeses[k]) throw std::invalid_argument("make_schedule: null nemesis");
    std::mt19937_64 rng(derive_seed(cfg.seed, kNemesisStream + k));
    int64_t t = interval / 2 + uniform(rng, 0, interval - 1);
    while (t < limit_ms) {
      ScheduleEntry start;
      start.at_ms = t;
      start.nemesis = k;
      start.nemesis_name = cfg.nemesis[k];
      start.phase = Phase::kStart;
      start.fault = nemeses[k]->plan(ctx, rng);
      all.push_back(start);
      const int64_t stop_at = t + std::max<int64_t>(0, start.fault.duration_ms);
      if (stop_at < limit_ms) {
        ScheduleEntry stop;
        stop.at_ms = stop_at;
        stop.nemesis = k;
        stop.nemesis_name = cfg.nemesis[k];
        stop.phase = Phase::kStop;
        stop.fault.f = start.fault.stop_f;
        all.push_back(stop);
      }
      t = stop_at + interval;
    }
  }
  // Within one nemesis entries are already in time order, its stop after its start: a stable sort by time
  // keeps that and orders ties between nemeses by list position.
  std::stable_sort(all.begin(), all.end(), [](const ScheduleEntry& a, const ScheduleEntry& b) {
    return a.at_ms != b.at_ms ? a.at_ms < b.at_ms : a.nemesis < b.nemesis;
  });
  std::vector<int64_t> open_start(nemeses.size(), -1);
  for (size_t i = 0; i < all.size(); ++i) {
    all[i].step = static_cast<int64_t>(i);
    if (all[i].phase == Phase::kStart) {
      open_start[all[i].nemesis] = all[i].step;
    } else {
      all[i].start_step = open_start[all[i].nemesis];
    }
  }
  s.plan = std::move(all);
  return s;
}

nlohmann::json to_json(const ScheduleEntry& e) {
  nlohmann::json j = {{"step", e.step},
                      {"at_ms", e.at_ms},
                      {"nemesis", e.nemesis_name},
                      {"phase", to_string(e.phase)},
                      {"f", e.fault.f}};
  if (e.phase == Phase::kStart) {
    j["targets"] = e.fault.targets;
    j["detail"] = e.fault.detail;
    j["duration_ms"] = e.fault.duration_ms;
  } else {
    j["start_step"] = e.start_step;
  }
  return j;
}

nlohmann::json to_json(const Schedule& s) {
  nlohmann::json plan = nlohmann::json::array();
  for (const auto& e : s.plan) plan.push_back(to_json(e));
  return {{"seed", s.seed},
          {"targeting", s.targeting},
          {"interval_s", s.interval_s},
          {"time_limit_s", s.time_limit_s},
          {"nemesis", s.nemesis},
          {"plan", plan}};
}

}  // namespace lockcheck
