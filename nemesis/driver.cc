#include "nemesis/driver.h"
#include "core/run_files.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>

namespace lockcheck {

NemesisDriver::NemesisDriver(const RunConfig& cfg, Cluster& cluster, HistoryWriter& history, ClientPauses& pauses,
                             RunLog* log, const Schedule* replay)
    : cfg_(cfg),
      cluster_(cluster),
      history_(history),
      pauses_(pauses),
      log_(log),
      env_{NemesisOptions::from(cfg), cluster, history} {
  for (const auto& name : cfg.nemesis) {
    auto n = make_nemesis(name);
    if (!n) throw ConfigError("--nemesis: unknown nemesis '" + name + "' (see lockcheck list)");
    nemeses_.push_back(std::move(n));
  }
  env_.client_pauses = &pauses_;
  env_.links = &links_;
  env_.stopping = &stopping_;
  if (cfg.nemesis_targeting == "holder" && !nemeses_.empty()) {
    holders_ = HolderTracker::attach(history);
    env_.holders = holders_.get();
  }
  if (!nemeses_.empty()) lock_view_ = LockStateView::attach(history, env_.options.ttl_ms);
  lock_state_timing_ = cfg.nemesis_timing == "lock-state" && replay == nullptr;
  std::vector<std::string> nodes, sentinels;
  for (const auto& n : cluster.nodes()) nodes.push_back(n.name);
  for (const auto& s : cluster.sentinels()) sentinels.push_back(s.name);
  const PlanContext ctx = PlanContext::from(cfg, nodes, sentinels);
  if (replay == nullptr) {
    schedule_ = make_schedule(cfg, ctx, nemeses_);
  } else {
    check_schedule_nemeses(*replay, cfg.nemesis, "--schedule");
    schedule_ = *replay;
    schedule_.seed = cfg.seed;
    schedule_.targeting = cfg.nemesis_targeting;
    schedule_.timing = "random";  // a replay applies its offsets (a lock-state file's are those that fired)
    schedule_.interval_s = cfg.nemesis_interval_s;
    schedule_.time_limit_s = cfg.time_limit_s;
    schedule_.nemesis = cfg.nemesis;
    for (auto& e : schedule_.plan) {
      e.nemesis = static_cast<size_t>(std::find(cfg.nemesis.begin(), cfg.nemesis.end(), e.nemesis_name) -
                                      cfg.nemesis.begin());
      if (e.phase == Phase::kStart && e.fault.stop_f.empty()) {
        std::mt19937_64 rng(0);  // only the stop action is taken from this plan: it is one per nemesis
        e.fault.stop_f = nemeses_[e.nemesis]->plan(ctx, rng).stop_f;
      }
    }
  }
  in_force_.resize(nemeses_.size());
  windows_.resize(nemeses_.size());
}

NemesisDriver::~NemesisDriver() {
  finish();
  {
    std::lock_guard<std::mutex> lock(mu_);
    release_thread_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NemesisDriver::start(const std::string& schedule_path) {
  schedule_path_ = schedule_path;
  if (!schedule_path_.empty()) write_json_file(schedule_path_, to_json(schedule_));
  for (size_t k = 0; k < nemeses_.size(); ++k) {
    try {
      nemeses_[k]->setup(env_);
    } catch (...) {
      for (size_t j = 0; j <= k; ++j) nemeses_[j]->teardown(env_);
      throw;
    }
  }
  t0_ = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    started_ = true;
  }
  if (!nemeses_.empty()) {
    log("nemesis: " + std::to_string(schedule_.plan.size()) + " scheduled steps, targeting " + cfg_.nemesis_targeting +
        ", timing " + (lock_state_timing_ ? std::string("lock-state") : std::string("random")) +
        (schedule_.fired_offsets ? " (a lock-state run's schedule, replayed at the offsets its faults fired)" : ""));
    thread_ = std::thread([this] { loop(); });
  }
}

void NemesisDriver::finish() noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (torn_down_) return;
    stopping_.store(true);
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return torn_down_; });  // every step of the teardown is bounded
  } else {
    if (started_ && !nemeses_.empty()) teardown_all();
    std::lock_guard<std::mutex> lock(mu_);
    torn_down_ = true;
  }
  write_schedule();
}

nlohmann::json NemesisDriver::executed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return executed_;
}

std::string NemesisDriver::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

int64_t NemesisDriver::elapsed_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0_).count();
}

bool NemesisDriver::sleep_until_ms(int64_t due_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_until(lock, t0_ + std::chrono::milliseconds(due_ms), [this] { return stopping_.load(); });
  return !stopping_.load();
}

void NemesisDriver::log(const std::string& line) {
  if (log_) log_->log(line);
}

void NemesisDriver::loop() noexcept {
  try {
    // For each start step, the step of its planned stop (absent: its stop is past the time limit), and the
    // planned time of the next start of the same nemesis (absent: none).
    std::map<int64_t, int64_t> stop_of, next_start_of;
    std::map<size_t, int64_t> last_start;  // nemesis -> step of its latest start so far
    for (const auto& e : schedule_.plan) {
      if (e.phase == Phase::kStop) {
        stop_of[e.start_step] = e.step;
        continue;
      }
      if (auto it = last_start.find(e.nemesis); it != last_start.end()) next_start_of[it->second] = e.at_ms;
      last_start[e.nemesis] = e.step;
    }
    const int64_t limit_ms = static_cast<int64_t>(std::llround(cfg_.time_limit_s * 1000));
    size_t cursor = 0;
    while (!stopping_.load()) {
      while (cursor < schedule_.plan.size() && schedule_.plan[cursor].phase == Phase::kStop) ++cursor;
      // The next thing due: the stop of a fault in force (due its duration after its actual start), the close of
      // an open window, or a planned start. On a tie: stops, then window closes, then starts.
      std::optional<size_t> stop_k, window_k;
      for (size_t k = 0; k < in_force_.size(); ++k) {
        const InForce& f = in_force_[k];
        if (f.active && f.stop_planned && (!stop_k || f.due_ms < in_force_[*stop_k].due_ms)) stop_k = k;
        const Window& w = windows_[k];
        if (w.open && (!window_k || w.window.close_ms < windows_[*window_k].window.close_ms)) window_k = k;
      }
      const bool have_start = cursor < schedule_.plan.size();
      if (!have_start && !stop_k && !window_k) break;
      int64_t due_ms = std::numeric_limits<int64_t>::max();
      if (stop_k) due_ms = in_force_[*stop_k].due_ms;
      if (window_k) due_ms = std::min(due_ms, windows_[*window_k].window.close_ms);
      if (have_start) due_ms = std::min(due_ms, schedule_.plan[cursor].at_ms);
      if (window_k) {
        // Wait for any open window's rule, or until the next thing is due.
        std::optional<LockSnapshot> snap = lock_view_->wait_until(
            [this](const LockSnapshot& s) {
              for (const Window& w : windows_) {
                if (w.open && rule_matches(w.rule, s, w.opened_seq)) return true;
              }
              return false;
            },
            t0_ + std::chrono::milliseconds(due_ms), &stopping_);
        if (stopping_.load()) break;
        if (snap) {
          for (size_t k = 0; k < windows_.size(); ++k) {
            if (!windows_[k].open) continue;
            const std::optional<TimingMatch> m = rule_matches(windows_[k].rule, *snap, windows_[k].opened_seq);
            if (!m) continue;
            Window w = std::move(windows_[k]);
            windows_[k].open = false;
            Timing t;
            t.timing = "lock-state";
            t.rule = rule_name(w.rule);
            t.moment = m->moment;
            fire(w.entry, t);
            auto it = stop_of.find(w.entry.step);
            in_force_[w.entry.nemesis].stop_planned = it != stop_of.end();
            break;
          }
          continue;
        }
      } else if (!sleep_until_ms(due_ms)) {
        break;
      }
      if (stop_k && in_force_[*stop_k].due_ms <= due_ms) {
        apply_stop(*stop_k, stop_of[in_force_[*stop_k].start_step]);
        continue;
      }
      if (window_k && windows_[*window_k].window.close_ms <= due_ms) {
        Window w = std::move(windows_[*window_k]);
        windows_[*window_k].open = false;
        Timing t;
        t.timing = "lock-state";
        t.rule = rule_name(w.rule);
        t.fallback = fallback_at_close(w.rule, w.window, lock_view_->snapshot().grants == 0);
        log("nemesis: step " + std::to_string(w.entry.step) + ": " + t.fallback);
        fire(w.entry, t);
        auto it = stop_of.find(w.entry.step);
        in_force_[w.entry.nemesis].stop_planned = it != stop_of.end();
        continue;
      }
      const ScheduleEntry& e = schedule_.plan[cursor++];
      open_start(e, next_start_of, limit_ms);
      if (!windows_[e.nemesis].open) {
        auto it = stop_of.find(e.step);
        in_force_[e.nemesis].stop_planned = it != stop_of.end();
      }
    }
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.empty()) error_ = std::string("nemesis: ") + e.what();
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return stopping_.load(); });  // finish() is certain: the destructor calls it
  }
  teardown_all();
  {
    std::lock_guard<std::mutex> lock(mu_);
    torn_down_ = true;
  }
  cv_.notify_all();
  // Park until the destructor: nodes this thread restarted die with it (PR_SET_PDEATHSIG).
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return release_thread_; });
}

Op NemesisDriver::run(size_t k, Op invoke) {
  invoke.process = kNemesis;
  invoke.type = OpType::kInvoke;
  const Op recorded = history_.record(invoke);
  Op done;
  try {
    done = nemeses_[k]->invoke(env_, recorded);
  } catch (const std::exception& e) {
    done = recorded;
    done.type = OpType::kInfo;
    done.error = e.what();
  }
  done.process = kNemesis;
  if (done.type == OpType::kInvoke) done.type = OpType::kInfo;
  done.f = recorded.f;
  if (!done.value.is_object()) done.value = recorded.value;
  done.value["fault"] = recorded.value["fault"];
  done.value["phase"] = recorded.value["phase"];
  if (!done.value.contains("detail") || !done.value["detail"].is_object()) {
    done.value["detail"] = nlohmann::json::object();
  }
  for (const char* field : {"step", "start_step", "final", "timing", "timing_fallback", "lock_state"}) {
    if (recorded.value["detail"].contains(field)) done.value["detail"][field] = recorded.value["detail"][field];
  }
  return history_.record(done);
}

void NemesisDriver::open_start(const ScheduleEntry& e, const std::map<int64_t, int64_t>& next_start_of,
                               int64_t limit_ms) {
  if (!lock_state_timing_) return fire(e, Timing{});
  Timing t;
  t.timing = "lock-state";
  const TimingRule rule = nemeses_[e.nemesis]->timing_rule(e.fault);
  t.rule = rule_name(rule);
  const LockSnapshot now = lock_view_->snapshot();
  t.fallback = fallback_at_open(rule, now, e.at_ms < env_.options.interval_ms);
  if (!t.fallback.empty()) {
    if (rule.trigger != TimingTrigger::kRandom) log("nemesis: step " + std::to_string(e.step) + ": " + t.fallback);
    return fire(e, t);
  }
  Window& w = windows_[e.nemesis];
  w.open = true;
  w.entry = e;
  w.rule = rule;
  auto next = next_start_of.find(e.step);
  w.window = timing_window(e.at_ms, env_.options.interval_ms, e.fault.duration_ms,
                           next == next_start_of.end() ? -1 : next->second, limit_ms);
  w.opened_seq = now.seq;
}

void NemesisDriver::fire(const ScheduleEntry& e, const Timing& t) {
  if (stopping_.load()) return;  // never a fault outside the run
  if (in_force_[e.nemesis].active) apply_stop(e.nemesis, -1);  // only when a start came late
  apply_start(e, t);
}

void NemesisDriver::aim_at_holder(const ScheduleEntry& e, FaultPlan& plan, bool held, std::string why) {
  bool aimed = false;
  if (held) {
    try {
      nemeses_[e.nemesis]->aim(env_, plan);
      // An aim that could not find what it aims at says so (mark_not_aimed); otherwise it aimed.
      aimed = plan.detail.value("aimed", true);
      why = plan.detail.value("not_aimed_because", "");
    } catch (const std::exception& ex) {
      log("nemesis: aiming step " + std::to_string(e.step) + " failed (" + ex.what() + "); using the plan");
      plan = e.fault;
      why = std::string("aiming failed: ") + ex.what();
    }
  }
  plan.detail["step"] = e.step;
  plan.detail["aimed"] = aimed;
  if (aimed) {
    plan.detail.erase("not_aimed_because");
  } else {
    plan.detail["not_aimed_because"] = why;
    log("nemesis: step " + std::to_string(e.step) + " not aimed at the holder: " + why);
  }
}

void NemesisDriver::apply_start(const ScheduleEntry& e, const Timing& t) {
  const size_t k = e.nemesis;
  FaultPlan plan = e.fault;
  plan.detail["step"] = e.step;
  if (holders_) {
    bool held = false;
    std::string why;
    if (t.timing == "lock-state" || schedule_.fired_offsets) {
      // The moment was the timing's (or, replayed, the original run's): aim at what is held now, no wait.
      held = !holders_->current().empty();
      why = "no lock was held when the fault started";
    } else {
      const int64_t half_interval_ms = static_cast<int64_t>(cfg_.nemesis_interval_s * 500);
      const int64_t wait_ms = std::min<int64_t>(5000, std::max<int64_t>(1, half_interval_ms));
      auto fresh =
          holders_->wait_for_fresh(holders_->acquires_seen(), std::chrono::milliseconds(wait_ms), &stopping_);
      if (stopping_.load()) return;
      held = fresh.has_value();
      why = "no lock was held within " + std::to_string(wait_ms) + " ms of the fault's start";
    }
    aim_at_holder(e, plan, held, why);
  }
  // How it was timed, and the lock state it met at this instant (both timings; nemesis/lock_state.h).
  plan.detail["timing"] = t.timing;
  plan.detail.erase("timing_fallback");
  if (!t.fallback.empty()) plan.detail["timing_fallback"] = t.fallback;
  if (!t.rule.empty()) plan.detail["timing_rule"] = t.rule;
  if (!t.moment.empty()) plan.detail["timing_moment"] = t.moment;
  const std::string lock_state = to_string(lock_view_->snapshot().run_state());
  plan.detail["lock_state"] = lock_state;
  Op op;
  op.f = plan.f;
  op.value = {{"fault", nemeses_[k]->name()}, {"phase", "start"}, {"targets", plan.targets}, {"detail", plan.detail}};
  const int64_t at = elapsed_ms();
  Op done = run(k, op);
  InForce& f = in_force_[k];
  f.active = true;
  f.stop_f = plan.stop_f;
  f.targets = done.value.value("targets", nlohmann::json::array());
  f.start_step = e.step;
  f.due_ms = at + std::max<int64_t>(0, plan.duration_ms);
  {
    std::lock_guard<std::mutex> lock(mu_);
    executed_.push_back({{"step", e.step},
                         {"at_ms", at},
                         {"phase", "start"},
                         {"f", plan.f},
                         {"targets", f.targets},
                         {"outcome", to_string(done.type)},
                         {"timing", t.timing},
                         {"lock_state", lock_state}});
    if (!t.fallback.empty()) executed_.back()["timing_fallback"] = t.fallback;
  }
  log("nemesis: " + plan.f + " " + f.targets.dump() + " -> " + to_string(done.type) +
      (done.error.empty() ? "" : " (" + done.error + ")"));
}

void NemesisDriver::apply_stop(size_t k, int64_t step) {
  InForce& f = in_force_[k];
  Op op;
  op.f = f.stop_f;
  nlohmann::json detail = {{"step", step >= 0 ? nlohmann::json(step) : nlohmann::json(nullptr)},
                           {"start_step", f.start_step}};
  if (step < 0) detail["final"] = true;
  op.value = {{"fault", nemeses_[k]->name()}, {"phase", "stop"}, {"targets", f.targets}, {"detail", detail}};
  const int64_t at = elapsed_ms();
  Op done = run(k, op);
  f.active = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    executed_.push_back({{"step", detail["step"]},
                         {"at_ms", at},
                         {"phase", "stop"},
                         {"f", f.stop_f},
                         {"targets", done.value.value("targets", nlohmann::json::array())},
                         {"outcome", to_string(done.type)}});
  }
  log("nemesis: " + f.stop_f + " " + f.targets.dump() + " -> " + to_string(done.type) +
      (done.error.empty() ? "" : " (" + done.error + ")"));
}

void NemesisDriver::teardown_all() noexcept {
  // The recorded heals first, so that the history shows every fault period closed ...
  for (size_t k = 0; k < in_force_.size(); ++k) {
    if (!in_force_[k].active) continue;
    try {
      apply_stop(k, -1);
    } catch (const std::exception& e) {
      log(std::string("nemesis: final heal failed: ") + e.what());
    }
  }
  // ... then each nemesis's own teardown, then the safety net.
  for (auto& n : nemeses_) n->teardown(env_);
  links_.heal_all(cluster_);
  pauses_.release_all();
  for (size_t n = 0; n < cluster_.nodes().size(); ++n) {
    try {
      if (cluster_.is_running(n)) cluster_.resume(n);
    } catch (const std::exception&) {
      // Not paused, or the backend cannot tell: stop() sends SIGCONT before it kills anyway.
    }
    try {
      cluster_.set_clock_offset(n, std::chrono::nanoseconds(0));
    } catch (const std::exception&) {
      // A backend without clock faults.
    }
  }
  log("nemesis: every fault undone");
}

void NemesisDriver::write_schedule() noexcept {
  if (schedule_path_.empty()) return;
  try {
    nlohmann::json j = to_json(schedule_);
    j["executed"] = executed();
    write_json_file(schedule_path_, j);
  } catch (const std::exception& e) {
    log(std::string("nemesis: cannot write schedule.json: ") + e.what());
  }
}

}  // namespace lockcheck
