// The nemesis thread of a run: applies the schedule (nemesis/schedule.h) at its times, records every fault
// and heal in the history as ops of process kNemesis (invoke, then the nemesis's completion; an exception
// becomes info), and undoes every fault when the run ends, whatever ended it.
//
// Lifecycle (the run loop, harness/runner.cc):
//   NemesisDriver d(cfg, cluster, history, pauses, &log);  // makes the nemeses, plans the schedule
//   d.start(run_dir + "/schedule.json");                  // writes the plan, sets up the nemeses, starts
//   ... workload runs ...
//   d.finish();     // stops applying the schedule, heals what is in force (recorded stop ops), tears every
//                   // nemesis down, adds "executed" to schedule.json. Idempotent; the destructor calls it.
// Teardown also heals every proxy link, resumes every node, resets every node clock and ends every client
// pause, as a safety net beyond what each nemesis knows it did.
//
// Holder targeting (cfg.nemesis_targeting == "holder"): before each fault the thread waits, at most half an
// interval (and at most 5 s), for a fresh ok acquire in the live history, then lets the nemesis aim at it
// (Nemesis::aim); the stop of a fault follows its actual start by the planned duration.
//
// Lock-state timing (cfg.nemesis_timing == "lock-state", nemesis/timing.h): each planned start opens a window
// at its planned time; the thread waits in it (at most one interval, never past the time limit or finish())
// for the moment the nemesis's rule names (Nemesis::timing_rule), read from the live lock state
// (nemesis/lock_state.h), and applies the fault then (holder targeting aims at once, at the newest holding:
// the one that triggered a grant rule), else at the window's end, or at once when it has no rule or the run is
// blind so far (no acquire ok seen), recording why (detail.timing_fallback). Stops and the other nemeses' starts
// due meanwhile are applied on time while a window is open. Same faults, same targets, same durations (a stop
// follows its actual start by the planned duration); only the starts move, never earlier. A replayed schedule
// (replay given) is always applied at its offsets (random timing; schedule_from_json turns a lock-state file
// into the offsets its faults fired at). Both timings record the lock state each start met (detail.lock_state).
//
// Threads: the faults are applied on the driver's own thread, which lives until the destructor: a node
// restarted by the kill nemesis is a child of that thread (PR_SET_PDEATHSIG), so the thread must outlive the
// workload. Every wait is bounded; finish() returns once the thread has torn everything down.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/client_pauses.h"
#include "core/run_log.h"
#include "nemesis/holders.h"
#include "nemesis/link_faults.h"
#include "nemesis/lock_state.h"
#include "nemesis/schedule.h"

namespace lockcheck {

class NemesisDriver {
 public:
  // Makes one nemesis per name in cfg.nemesis (ConfigError for an unknown one) and plans the schedule, or,
  // when replay is given (`lockcheck run --schedule FILE`), applies that schedule instead, by offset: every
  // nemesis it names must be in cfg.nemesis (ConfigError otherwise, see check_schedule_nemeses).
  // Everything passed in must outlive the driver. log and replay may be null.
  NemesisDriver(const RunConfig& cfg, Cluster& cluster, HistoryWriter& history, ClientPauses& pauses, RunLog* log,
                const Schedule* replay = nullptr);
  ~NemesisDriver();
  NemesisDriver(const NemesisDriver&) = delete;
  NemesisDriver& operator=(const NemesisDriver&) = delete;

  const Schedule& schedule() const { return schedule_; }

  // Writes the plan to schedule_path (empty: nowhere), runs every nemesis's setup and starts the thread;
  // schedule times count from this call. Throws on a file error or a failed setup (then nothing is running).
  void start(const std::string& schedule_path);

  // See the header comment. Never throws; blocks until the teardown is done (each step is bounded).
  void finish() noexcept;

  // What was applied so far (schedule.json's "executed").
  nlohmann::json executed() const;
  // The first harness error of the thread (an exception that escaped a nemesis's bookkeeping), or "".
  std::string error() const;

 private:
  struct InForce {
    bool active = false;
    std::string stop_f;
    nlohmann::json targets;
    int64_t start_step = -1;
    int64_t due_ms = 0;  // when its stop is due
    bool stop_planned = false;
  };

  // How a start was timed, for its detail and its "executed" entry.
  struct Timing {
    std::string timing = "random";  // "random" or "lock-state"
    std::string fallback;           // lock-state only: why it fell back to a time ("" when the rule matched)
    std::string rule;               // lock-state only: the rule's trigger (to_string(TimingTrigger))
    std::string moment;             // lock-state only: what the rule fired on, in words
  };
  // An open lock-state window of one nemesis (at most one each: its next start comes after its stop).
  struct Window {
    bool open = false;
    ScheduleEntry entry;
    TimingRule rule;
    TimingWindow window;
    uint64_t opened_seq = 0;  // the view's event count when it opened: events after it count
  };

  void loop() noexcept;
  // Opens entry e's window (lock-state), or applies it at once (random timing, a rule-less fault, blind).
  void open_start(const ScheduleEntry& e, const std::map<int64_t, int64_t>& next_start_of, int64_t limit_ms);
  void fire(const ScheduleEntry& e, const Timing& t);  // stops the nemesis's fault still in force, applies e
  void apply_start(const ScheduleEntry& e, const Timing& t);
  // Holder targeting: lets the fault's nemesis aim plan at what is held (held: a holding is there to aim at; why:
  // the words for the detail's not_aimed_because when it is not), then records aimed / not_aimed_because.
  void aim_at_holder(const ScheduleEntry& e, FaultPlan& plan, bool held, std::string why);
  void apply_stop(size_t k, int64_t step);
  Op run(size_t k, Op invoke);  // records the invoke, applies it, records and returns the completion
  void teardown_all() noexcept;
  int64_t elapsed_ms() const;
  bool sleep_until_ms(int64_t due_ms);  // false when finish() was called
  void write_schedule() noexcept;
  void log(const std::string& line);

  const RunConfig& cfg_;
  Cluster& cluster_;
  HistoryWriter& history_;
  ClientPauses& pauses_;
  RunLog* log_;
  std::vector<std::unique_ptr<Nemesis>> nemeses_;
  std::shared_ptr<HolderTracker> holders_;
  std::shared_ptr<LockStateView> lock_view_;  // the live lock state (both timings record what a fault met)
  bool lock_state_timing_ = false;            // cfg says lock-state and the schedule is not a replay
  std::vector<Window> windows_;               // per nemesis
  LinkFaults links_;
  std::atomic<bool> stopping_{false};
  NemesisEnv env_;
  Schedule schedule_;
  std::string schedule_path_;
  std::vector<InForce> in_force_;
  std::chrono::steady_clock::time_point t0_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;
  bool torn_down_ = false;
  bool release_thread_ = false;
  nlohmann::json executed_ = nlohmann::json::array();
  std::string error_;
  std::thread thread_;
};

}  // namespace lockcheck
