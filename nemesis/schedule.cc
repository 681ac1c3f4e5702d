#include "nemesis/schedule.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <map>
#include <stdexcept>

#include "core/json_int.h"
#include "core/party.h"
#include "core/random.h"

namespace lockcheck {

const char* to_string(Phase p) { return p == Phase::kStart ? "start" : "stop"; }

NemesisOptions NemesisOptions::from(const RunConfig& c) {
  NemesisOptions o;
  o.concurrency = c.concurrency;
  o.ttl_ms = c.ttl_ms;
  o.interval_ms = std::max<int64_t>(1, static_cast<int64_t>(std::llround(c.nemesis_interval_s * 1000)));
  o.restart_delay_ms = c.restart_delay_ms;
  o.drift_ppm = c.drift_ppm;
  o.delay_ms = c.delay_ms;
  o.pause_ms = c.effective_pause_ms();
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
  ctx.ttl_ms = o.ttl_ms;
  ctx.interval_ms = o.interval_ms;
  ctx.restart_delay_ms = o.restart_delay_ms;
  ctx.drift_ppm = o.drift_ppm;
  ctx.delay_ms = o.delay_ms;
  ctx.pause_ms = o.pause_ms;
  return ctx;
}

Schedule make_schedule(const RunConfig& cfg, const PlanContext& ctx,
                       const std::vector<std::unique_ptr<Nemesis>>& nemeses) {
  if (nemeses.size() != cfg.nemesis.size()) throw std::invalid_argument("make_schedule: one nemesis per name");
  Schedule s;
  s.seed = cfg.seed;
  s.targeting = cfg.nemesis_targeting;
  s.timing = cfg.nemesis_timing;
  s.interval_s = cfg.nemesis_interval_s;
  s.time_limit_s = cfg.time_limit_s;
  s.nemesis = cfg.nemesis;
  const int64_t limit_ms = static_cast<int64_t>(std::llround(cfg.time_limit_s * 1000));
  const int64_t interval = ctx.interval_ms;
  std::vector<ScheduleEntry> all;
  for (size_t k = 0; k < nemeses.size(); ++k) {
    if (!nemeses[k]) throw std::invalid_argument("make_schedule: null nemesis");
    std::mt19937_64 rng(derive_seed(cfg.seed, kNemesisStream + k));
    const int64_t phase = interval / 2 + uniform(rng, 0, interval - 1);
    // Lock-state timing: the same faults, as many, with the same spacing, slid earlier by the phase, so that the
    // first window opens when the workload starts (each fault then waits for its moment).
    const int64_t slide = cfg.nemesis_timing == "lock-state" ? phase : 0;
    const size_t first = all.size();
    int64_t t = phase;
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
    for (size_t i = first; i < all.size(); ++i) all[i].at_ms -= slide;
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
    j["stop_f"] = e.fault.stop_f;
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
          {"timing", s.timing},
          {"interval_s", s.interval_s},
          {"time_limit_s", s.time_limit_s},
          {"nemesis", s.nemesis},
          {"plan", plan}};
}

namespace {

// Time order (stable: ties keep file order), steps renumbered 0..n-1, each stop's start_step pointing at the
// renumbered start of the same nemesis before it (-1 when that start is gone).
void renumber_schedule(std::vector<ScheduleEntry>& plan) {
  std::stable_sort(plan.begin(), plan.end(),
                   [](const ScheduleEntry& a, const ScheduleEntry& b) { return a.at_ms < b.at_ms; });
  std::map<std::string, int64_t> open;  // nemesis name -> step of its latest start
  for (size_t i = 0; i < plan.size(); ++i) {
    plan[i].step = static_cast<int64_t>(i);
    if (plan[i].phase == Phase::kStart) {
      open[plan[i].nemesis_name] = plan[i].step;
    } else {
      auto it = open.find(plan[i].nemesis_name);
      plan[i].start_step = it == open.end() ? -1 : it->second;
      if (it != open.end()) open.erase(it);
    }
  }
  // A stop without its start (the start was removed) would heal nothing: drop it.
  plan.erase(std::remove_if(plan.begin(), plan.end(),
                            [](const ScheduleEntry& e) { return e.phase == Phase::kStop && e.start_step < 0; }),
             plan.end());
  open.clear();
  for (size_t i = 0; i < plan.size(); ++i) {
    plan[i].step = static_cast<int64_t>(i);
    if (plan[i].phase == Phase::kStart) {
      open[plan[i].nemesis_name] = plan[i].step;
    } else {
      plan[i].start_step = open[plan[i].nemesis_name];
    }
  }
}

// An integer from 0 to INT64_MAX (a time or a duration in ms), or nullopt.
std::optional<int64_t> non_negative(const nlohmann::json& v) {
  const std::optional<int64_t> x = json_integer<int64_t>(v);
  return x && *x >= 0 ? x : std::nullopt;
}

// An array of names (targets, a partition link's ends).
bool is_names(const nlohmann::json& v) {
  return v.is_array() && std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_string(); });
}

}  // namespace

Schedule schedule_from_json(const nlohmann::json& j, const std::string& source) {
  if (!j.is_object()) throw ConfigError(source + ": a schedule must be a JSON object");
  auto field_error = [&](const std::string& where, const std::string& what) {
    return ConfigError(source + ": " + where + ": " + what);
  };
  Schedule s;
  try {
    if (j.contains("seed")) {
      const std::optional<uint64_t> seed = json_integer<uint64_t>(j["seed"]);
      if (!seed) throw field_error("seed", "not an integer >= 0");
      s.seed = *seed;
    }
    s.targeting = j.value("targeting", std::string("random"));
    s.timing = j.value("timing", std::string("random"));
    s.interval_s = j.value("interval_s", 0.0);
    s.time_limit_s = j.value("time_limit_s", 0.0);
    if (j.contains("nemesis")) s.nemesis = j["nemesis"].get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(source + ": seed, targeting, timing, interval_s, time_limit_s or nemesis has the wrong type (" +
                      e.what() + ")");
  }
  if (s.targeting != "random" && s.targeting != "holder") {
    throw field_error("targeting", "'" + s.targeting + "' is not one of random, holder");
  }
  if (s.timing != "random" && s.timing != "lock-state") {
    throw field_error("timing", "'" + s.timing + "' is not one of random, lock-state");
  }
  auto plan = j.find("plan");
  if (plan == j.end() || !plan->is_array()) throw field_error("plan", "missing or not an array");
  // A lock-state run's file: the offsets its starts actually fired at, by the file's step (header comment).
  std::optional<std::map<int64_t, int64_t>> fired;
  if (s.timing == "lock-state") {
    auto ex = j.find("executed");
    if (ex != j.end() && ex->is_array()) {
      fired.emplace();
      for (const auto& x : *ex) {
        if (!x.is_object() || x.value("phase", "") != "start") continue;
        const std::optional<int64_t> step = x.contains("step") ? non_negative(x["step"]) : std::nullopt;
        const std::optional<int64_t> at = x.contains("at_ms") ? non_negative(x["at_ms"]) : std::nullopt;
        if (step && at) (*fired)[*step] = *at;
      }
    }
  }
  std::map<int64_t, size_t> start_of_step;  // the file's step of a start -> its index in s.plan
  std::vector<int64_t> file_start_step;     // for each entry of s.plan: a stop's start_step in the file (-1)
  for (size_t i = 0; i < plan->size(); ++i) {
    const nlohmann::json& e = (*plan)[i];
    const std::string where = "plan[" + std::to_string(i) + "]";
    if (!e.is_object()) throw field_error(where, "not an object");
    ScheduleEntry entry;
    try {
      const std::optional<int64_t> at_ms = e.contains("at_ms") ? non_negative(e["at_ms"]) : std::nullopt;
      if (!at_ms) throw field_error(where + ".at_ms", "missing or not an integer >= 0");
      entry.at_ms = *at_ms;
      if (!e.contains("nemesis") || !e["nemesis"].is_string() || e["nemesis"].get<std::string>().empty())
        throw field_error(where + ".nemesis", "missing or not a nemesis name");
      entry.nemesis_name = e["nemesis"].get<std::string>();
      const std::string phase = e.value("phase", std::string());
      if (phase != "start" && phase != "stop") throw field_error(where + ".phase", "must be \"start\" or \"stop\"");
      entry.phase = phase == "start" ? Phase::kStart : Phase::kStop;
      if (!e.contains("f") || !e["f"].is_string() || e["f"].get<std::string>().empty())
        throw field_error(where + ".f", "missing or not an action name");
      entry.fault.f = e["f"].get<std::string>();
      if (entry.phase == Phase::kStart) {
        entry.fault.targets = e.value("targets", nlohmann::json::array());
        if (!is_names(entry.fault.targets)) throw field_error(where + ".targets", "not an array of names");
        entry.fault.detail = e.value("detail", nlohmann::json::object());
        if (!entry.fault.detail.is_object()) throw field_error(where + ".detail", "not an object");
        const std::optional<int64_t> duration =
            e.contains("duration_ms") ? non_negative(e["duration_ms"]) : std::nullopt;
        if (!duration) throw field_error(where + ".duration_ms", "missing or not an integer >= 0");
        entry.fault.duration_ms = *duration;
        entry.fault.stop_f = e.value("stop_f", std::string());
      }
    } catch (const nlohmann::json::exception& ex) {
      throw field_error(where, std::string("wrong type (") + ex.what() + ")");
    }
    if (s.nemesis.empty() ||
        std::find(s.nemesis.begin(), s.nemesis.end(), entry.nemesis_name) == s.nemesis.end()) {
      if (j.contains("nemesis")) {
        throw field_error(where + ".nemesis", "'" + entry.nemesis_name + "' is not in the schedule's \"nemesis\" list");
      }
      s.nemesis.push_back(entry.nemesis_name);
    }
    if (fired) {
      const std::optional<int64_t> step = e.contains("step") ? non_negative(e["step"]) : std::nullopt;
      if (entry.phase == Phase::kStart) {
        auto it = step ? fired->find(*step) : fired->end();
        if (it == fired->end()) continue;  // never fired: the replay leaves it out (and its stop below)
        entry.at_ms = it->second;
        start_of_step[*step] = s.plan.size();
        file_start_step.push_back(-1);
      } else {
        const std::optional<int64_t> of =
            e.contains("start_step") ? non_negative(e["start_step"]) : std::nullopt;
        auto it = of ? start_of_step.find(*of) : start_of_step.end();
        if (it == start_of_step.end()) continue;  // the stop of a start that never fired
        file_start_step.push_back(*of);
      }
    }
    s.plan.push_back(std::move(entry));
  }
  if (fired) {
    // Each stop follows its start's actual offset by the start's duration, as the driver applied it.
    for (size_t i = 0; i < s.plan.size(); ++i) {
      if (s.plan[i].phase != Phase::kStop) continue;
      const ScheduleEntry& start = s.plan[start_of_step.at(file_start_step[i])];
      s.plan[i].at_ms = start.at_ms + start.fault.duration_ms;
    }
    s.timing = "random";
    s.fired_offsets = true;
  }
  // A start's stop_f from its stop, when the file has it there only (older files).
  std::map<std::string, size_t> open;
  for (size_t i = 0; i < s.plan.size(); ++i) {
    auto& e = s.plan[i];
    if (e.phase == Phase::kStart) {
      open[e.nemesis_name] = i;
    } else if (auto it = open.find(e.nemesis_name); it != open.end()) {
      if (s.plan[it->second].fault.stop_f.empty()) s.plan[it->second].fault.stop_f = e.fault.f;
    }
  }
  renumber_schedule(s.plan);
  for (auto& e : s.plan) {
    e.nemesis = static_cast<size_t>(std::find(s.nemesis.begin(), s.nemesis.end(), e.nemesis_name) - s.nemesis.begin());
  }
  return s;
}

Schedule read_schedule_file(const std::string& path) {
  return schedule_from_json(read_json_file(path), path);
}

namespace {

// What a detail value of type t must be, or nullptr when v is one.
const char* detail_type_error(const nlohmann::json& v, DetailType t) {
  switch (t) {
    case DetailType::kInteger: return json_integer<int64_t>(v) ? nullptr : "an integer";
    case DetailType::kNonNegative: return non_negative(v) ? nullptr : "an integer >= 0";
    case DetailType::kString: return v.is_string() ? nullptr : "a string";
    case DetailType::kBool: return v.is_boolean() ? nullptr : "true or false";
    case DetailType::kStrings: return is_names(v) ? nullptr : "an array of names";
    case DetailType::kLinks:
      if (v.is_array() &&
          std::all_of(v.begin(), v.end(), [](const nlohmann::json& l) { return is_names(l) && l.size() == 2; })) {
        return nullptr;
      }
      return "an array of [from, to] pairs of names";
  }
  return "of a known type";
}

// The fields any fault's detail may hold (the driver's, the aiming's), with their types.
const std::vector<DetailField>& common_detail_fields() {
  static const std::vector<DetailField> kCommon = {{"mode", DetailType::kString},
                                                   {"step", DetailType::kNonNegative},
                                                   {"aimed", DetailType::kBool},
                                                   {"not_aimed_because", DetailType::kString}};
  return kCommon;
}

}  // namespace

std::string fault_detail_error(const Nemesis& n, const nlohmann::json& detail) {
  if (!detail.is_object()) return "detail must be an object";
  auto check = [&](const std::vector<DetailField>& fields) -> std::string {
    for (const DetailField& f : fields) {
      auto it = detail.find(f.name);
      if (it == detail.end()) continue;
      if (const char* want = detail_type_error(*it, f.type)) {
        return std::string("detail.") + f.name + " must be " + want;
      }
    }
    return "";
  };
  if (std::string e = check(common_detail_fields()); !e.empty()) return e;
  if (auto at = detail.find("aimed_at"); at != detail.end()) {
    if (!at->is_object()) return "detail.aimed_at must be an object";
    for (const char* k : {"key", "redis_key"}) {
      if (at->contains(k) && !(*at)[k].is_string()) return std::string("detail.aimed_at.") + k + " must be a string";
    }
  }
  return check(n.detail_fields());
}

void check_schedule_nemeses(const Schedule& s, const std::vector<std::string>& run_nemesis, const std::string& flag) {
  std::map<std::string, std::unique_ptr<Nemesis>> made;
  for (const auto& e : s.plan) {
    if (std::find(run_nemesis.begin(), run_nemesis.end(), e.nemesis_name) == run_nemesis.end()) {
      std::string list;
      for (const auto& n : run_nemesis) list += (list.empty() ? "" : ",") + n;
      throw ConfigError(flag + ": step " + std::to_string(e.step) + " is a fault of nemesis '" + e.nemesis_name +
                        "', which the run does not have (--nemesis " + (list.empty() ? "none" : list) + ")");
    }
    if (e.phase != Phase::kStart) continue;
    auto it = made.find(e.nemesis_name);
    if (it == made.end()) it = made.emplace(e.nemesis_name, make_nemesis(e.nemesis_name)).first;
    if (!it->second) {
      throw ConfigError(flag + ": step " + std::to_string(e.step) + ": '" + e.nemesis_name + "' is not a nemesis");
    }
    const std::string why = fault_detail_error(*it->second, e.fault.detail);
    if (!why.empty()) {
      throw ConfigError(flag + ": step " + std::to_string(e.step) + " (" + e.nemesis_name + " " + e.fault.f + "): " +
                        why);
    }
  }
}

std::vector<size_t> schedule_faults(const Schedule& s) {
  std::vector<size_t> out;
  for (size_t i = 0; i < s.plan.size(); ++i) {
    if (s.plan[i].phase == Phase::kStart) out.push_back(i);
  }
  return out;
}

Schedule without_fault(const Schedule& s, size_t start_index) {
  Schedule out = s;
  if (start_index >= s.plan.size() || s.plan[start_index].phase != Phase::kStart) {
    throw std::invalid_argument("without_fault: not a start entry");
  }
  const int64_t step = s.plan[start_index].step;
  out.plan.clear();
  for (const auto& e : s.plan) {
    if (e.step == step || (e.phase == Phase::kStop && e.start_step == step)) continue;
    out.plan.push_back(e);
  }
  renumber_schedule(out.plan);
  return out;
}

Schedule slid_schedule(const Schedule& s, int64_t by_ms) {
  Schedule out = s;
  for (auto& e : out.plan) {
    if (e.at_ms < by_ms) throw std::invalid_argument("slid_schedule: an entry would move before the start");
    e.at_ms -= by_ms;
  }
  renumber_schedule(out.plan);
  return out;
}

Schedule cut_schedule(const Schedule& s, int64_t limit_ms) {
  Schedule out = s;
  out.plan.clear();
  for (const auto& e : s.plan) {
    if (e.at_ms < limit_ms) out.plan.push_back(e);
  }
  out.time_limit_s = static_cast<double>(limit_ms) / 1000.0;
  renumber_schedule(out.plan);
  return out;
}

}  // namespace lockcheck
