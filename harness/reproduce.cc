#include "harness/reproduce.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "checkers/checker.h"
#include "core/exit_codes.h"
#include "core/history.h"
#include "core/party.h"
#include "core/run_files.h"
#include "harness/child_runs.h"
#include "harness/rerun.h"
#include "harness/runner.h"
#include "report/html.h"
#include "report/report.h"
#include "sys/process.h"
#include "sys/signals.h"

namespace fs = boost::filesystem;

namespace lockcheck {

std::vector<AnomalySeen> anomaly_kinds(const nlohmann::json& results, const History* h) {
  std::vector<AnomalySeen> seen;
  for_each_violation(results, [&](const nlohmann::json& c, const nlohmann::json& a) {
    if (!a.contains("kind") || !a["kind"].is_string()) return;
    const std::optional<int64_t> t = anomaly_time_ns(a, h);
    AnomalyKind kind{c.value("checker", ""), a["kind"].get<std::string>()};
    auto it = std::find_if(seen.begin(), seen.end(), [&](const AnomalySeen& s) { return s.kind == kind; });
    if (it == seen.end()) {
      seen.push_back({kind, t});
    } else if (t && (!it->first_ns || *t < *it->first_ns)) {
      it->first_ns = t;
    }
  });
  std::stable_sort(seen.begin(), seen.end(), [](const AnomalySeen& a, const AnomalySeen& b) {
    if (a.first_ns.has_value() != b.first_ns.has_value()) return a.first_ns.has_value();
    return a.first_ns && *a.first_ns < *b.first_ns;
  });
  return seen;
}

size_t fault_count(const Schedule& s) { return schedule_faults(s).size(); }

std::optional<double> CandidateRecord::median_first_s() const {
  if (first_anomaly_s.empty()) return std::nullopt;
  std::vector<double> v = first_anomaly_s;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

nlohmann::json to_json(const CandidateRecord& r) {
  nlohmann::json j = {{"index", r.index},         {"change", r.change},   {"time_limit_s", r.time_limit_s},
                      {"faults", r.faults},       {"concurrency", r.concurrency}, {"keys", r.keys},
                      {"tries", r.tries},         {"reproduced", r.reproduced},   {"failed", r.failed},
                      {"kept", r.kept},           {"first_anomaly_s", r.first_anomaly_s}};
  const auto m = r.median_first_s();
  j["median_first_anomaly_s"] = m ? nlohmann::json(*m) : nlohmann::json();
  if (!r.faults_matched.empty()) j["faults_matched_by_role"] = r.faults_matched;
  if (!r.note.empty()) j["note"] = r.note;
  return j;
}

namespace {

// Client slot names in a schedule entry ("c4") folded into the first `concurrency` slots, so that a schedule
// planned for more processes still names slots that exist (holder targeting re-aims them anyway).
void fold_client_slots(nlohmann::json& j, int concurrency) {
  if (j.is_string()) {
    auto p = Party::parse(j.get<std::string>());
    if (p && p->is_client() && p->index >= static_cast<size_t>(concurrency)) {
      j = Party::client(p->index % static_cast<size_t>(concurrency)).name();
    }
  } else if (j.is_array() || j.is_object()) {
    for (auto& v : j) fold_client_slots(v, concurrency);
  }
}

// The shrink's state and its one evaluation routine.
class Shrinker {
 public:
  Shrinker(const ReproduceOptions& o, ReproRunner& runner, std::ostream& log)
      : o_(o), runner_(runner), log_(log), t0_(runner.now_s()) {}

  // Runs c up to N times (fewer when it cannot reach R any more, the budget would be exceeded, or an
  // interrupt); records and returns whether it is kept. adopt: a kept case becomes the best (a shrink step);
  // false for a confirmation, which may use the budget kept back for it.
  bool evaluate(const ReproCase& c, bool adopt = true) {
    CandidateRecord r;
    r.index = result_.tried.size();
    r.change = c.change;
    r.time_limit_s = c.config.time_limit_s;
    r.faults = fault_count(c.schedule);
    r.concurrency = c.config.concurrency;
    r.keys = c.config.keys;
    const TryTally t = run_tries(
        runner_, c, r.index, o_.tries, startup_s_,
        [&](const TryTally& so_far) -> std::string {
          if (out_of_budget(0.0)) {
            result_.budget_exhausted = true;
            return "budget ran out after " + std::to_string(so_far.tries) + " tries";
          }
          if (adopt && out_of_budget(confirmation_reserve_s())) {
            steps_out_ = true;
            return "budget ran out after " + std::to_string(so_far.tries) + " tries (the rest confirms the smallest case)";
          }
          return "";
        },
        [&](const TryTally& so_far) -> std::string {
          if (so_far.tries - so_far.hits <= o_.tries - o_.rate) return "";
          return "stopped after " + std::to_string(so_far.tries) + " tries: cannot reach " + std::to_string(o_.rate) +
                 " of " + std::to_string(o_.tries);
        });
    r.tries = t.tries;
    r.reproduced = t.hits;
    r.failed = t.failed;
    r.first_anomaly_s = t.first_anomaly_s;
    r.faults_matched = t.faults_matched;
    r.note = t.note;
    result_.interrupted = result_.interrupted || t.interrupted;
    result_.runs_failing = result_.runs_failing || t.runs_failing;
    r.kept = r.reproduced >= o_.rate;
    log_ << "  [" << r.index << "] " << std::left << std::setw(48) << r.change << " reproduced " << r.reproduced
         << " of " << r.tries << (r.kept ? "  kept" : "") << (r.note.empty() ? "" : "  (" + r.note + ")");
    if (!r.faults_matched.empty()) {
      log_ << "; faults matched by role:";
      for (const auto& [k, n] : r.faults_matched) log_ << " " << k << "/" << n;
    }
    log_ << "\n" << std::flush;
    result_.tried.push_back(r);
    if (adopt && r.kept && r.index > 0) {
      result_.best = c;
      result_.best_index = r.index;
      chain_.push_back({r.index, c});
    }
    return r.kept;
  }

  // The cases kept by shrink steps, in order (each smaller than the one before).
  const std::vector<std::pair<size_t, ReproCase>>& chain() const { return chain_; }
  void adopt(const ReproCase& c, size_t record) {
    result_.best = c;
    result_.best_index = record;
  }

  // No more shrink steps: the budget (less the confirmation's share) is used up, or an interrupt.
  bool must_stop() const { return steps_out_ || hard_stop(); }
  // Nothing more at all.
  bool hard_stop() const { return result_.budget_exhausted || result_.interrupted || result_.runs_failing; }
  bool steps_out() const { return steps_out_; }
  const CandidateRecord& best_record() const { return result_.tried[result_.best_index]; }
  ShrinkResult& result() { return result_; }
  void finish() { result_.elapsed_s = runner_.now_s() - t0_; }

 private:
  // Starting another run now could end more than one run's time limit past the budget (less reserve_s).
  bool out_of_budget(double reserve_s) const {
    return runner_.now_s() - t0_ + startup_s_ > o_.budget_min * 60.0 - reserve_s;
  }
  // What confirming the best case would take (N runs of it): kept back from the shrink steps once a step was kept.
  double confirmation_reserve_s() const {
    if (chain_.empty()) return 0.0;
    return o_.tries * (result_.best.config.time_limit_s + startup_s_);
  }

  const ReproduceOptions& o_;
  ReproRunner& runner_;
  std::ostream& log_;
  double t0_;
  double startup_s_ = 0;  // the longest a run took beyond its time limit so far
  ShrinkResult result_;
  std::vector<std::pair<size_t, ReproCase>> chain_;  // record index, case
  bool steps_out_ = false;  // the shrink steps' share of the budget is used up
};

// Up to the next half second.
double half_second_up(double s) { return std::ceil(s * 2.0) / 2.0; }

// The time limits a cut tries, tightest first: just past the first anomaly of R of the N tries (its R/N quantile)
// x 1.2 + 1 s, then past the latest one x 1.2 + 1 s, then x 1.5 + 2 s.
std::vector<double> cut_limits_s(const CandidateRecord& r, const ReproduceOptions& o) {
  std::vector<double> v = r.first_anomaly_s;
  std::sort(v.begin(), v.end());
  const double share = static_cast<double>(o.rate) / static_cast<double>(o.tries);
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(std::max(1.0, std::ceil(share * v.size()))) - 1);
  std::vector<double> limits = {half_second_up(v[k] * 1.2 + 1.0), half_second_up(v.back() * 1.2 + 1.0),
                                half_second_up(v.back() * 1.5 + 2.0)};
  std::sort(limits.begin(), limits.end());
  limits.erase(std::unique(limits.begin(), limits.end()), limits.end());
  return limits;
}

std::string seconds_str(double s) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(s == std::floor(s) ? 0 : 1) << s << " s";
  return o.str();
}

// Tries cutting the best case's time limit (cut_limits_s, tightest first); true when one was kept.
bool try_time_cuts(Shrinker& sh, const ReproduceOptions& o) {
  if (sh.best_record().first_anomaly_s.empty()) return false;
  for (double limit : cut_limits_s(sh.best_record(), o)) {
    if (sh.must_stop()) return false;
    const ReproCase& best = sh.result().best;
    if (limit > best.config.time_limit_s - 1.0) continue;  // not worth a candidate
    ReproCase c = best;
    c.change = "time limit " + seconds_str(best.config.time_limit_s) + " -> " + seconds_str(limit);
    c.config.time_limit_s = limit;
    c.schedule = cut_schedule(best.schedule, static_cast<int64_t>(std::llround(limit * 1000)));
    if (sh.evaluate(c)) return true;
  }
  return false;
}

std::string fault_name(const ScheduleEntry& e) {
  std::ostringstream o;
  o << e.fault.f << " at " << std::fixed << std::setprecision(1) << static_cast<double>(e.at_ms) / 1000.0 << " s";
  return o.str();
}

void try_faults(Shrinker& sh) {
  // The fault in force when the anomaly came (the latest start before the median first anomaly), alone.
  {
    const ReproCase& best = sh.result().best;
    const auto faults = schedule_faults(best.schedule);
    const auto median = sh.best_record().median_first_s();
    if (faults.size() > 1 && median && !sh.must_stop()) {
      std::optional<size_t> at;
      for (size_t i : faults) {
        if (static_cast<double>(best.schedule.plan[i].at_ms) / 1000.0 <= *median) at = i;
      }
      if (at) {
        ReproCase c = best;
        const std::string name = fault_name(best.schedule.plan[*at]);
        c.change = "only " + name;
        // Drop the others from the last down: without_fault renumbers, earlier indices stay valid.
        for (size_t k = faults.size(); k-- > 0;) {
          if (faults[k] != *at) c.schedule = without_fault(c.schedule, faults[k]);
        }
        sh.evaluate(c);
      }
    }
  }
  // Each fault dropped in turn, the rest at their offsets (the last first: removing it keeps the earlier
  // indices valid).
  for (size_t k = fault_count(sh.result().best.schedule); k-- > 0;) {
    if (sh.must_stop()) return;
    const ReproCase& best = sh.result().best;
    const auto faults = schedule_faults(best.schedule);
    if (k >= faults.size()) continue;
    ReproCase c = best;
    c.change = "without " + fault_name(best.schedule.plan[faults[k]]);
    c.schedule = without_fault(best.schedule, faults[k]);
    sh.evaluate(c);
  }
}

// The kept faults slid together to the earliest offsets that still reproduce (the first at 1 s, then halfway
// back to where it was), so that the time cut after it can end the case sooner: an anomaly that came late
// because its fault came late (a schedule drawn for a long run) no longer needs the long run.
void try_slide(Shrinker& sh) {
  constexpr int64_t kEarliestMs = 1000;  // the clients have started and someone holds the lock
  const ReproCase& best0 = sh.result().best;
  const auto faults = schedule_faults(best0.schedule);
  if (faults.empty()) return;
  const int64_t first_ms = best0.schedule.plan[faults.front()].at_ms;
  std::vector<int64_t> targets = {kEarliestMs};
  if (first_ms - kEarliestMs > 1000) targets.push_back((first_ms + kEarliestMs) / 2);
  for (int64_t target : targets) {
    if (sh.must_stop()) return;
    const ReproCase& best = sh.result().best;
    const auto now = schedule_faults(best.schedule);
    const int64_t from = best.schedule.plan[now.front()].at_ms;
    int64_t earliest = from;
    for (const auto& e : best.schedule.plan) earliest = std::min(earliest, e.at_ms);
    const int64_t by = std::min(from - target, earliest);
    if (by < 500) continue;  // not worth a candidate
    ReproCase c = best;
    c.schedule = slid_schedule(best.schedule, by);
    std::ostringstream change;
    change << "faults " << std::fixed << std::setprecision(1) << static_cast<double>(by) / 1000.0
           << " s earlier (first at " << static_cast<double>(from - by) / 1000.0 << " s)";
    c.change = change.str();
    if (sh.evaluate(c)) return;
  }
}

void try_fewer(Shrinker& sh, bool processes) {
  const int now = processes ? sh.result().best.config.concurrency : sh.result().best.config.keys;
  const int floor = processes ? 2 : 1;
  std::vector<int> options;
  if (now > floor) options.push_back(floor);
  if ((now + 1) / 2 > floor && (now + 1) / 2 < now) options.push_back((now + 1) / 2);
  for (int n : options) {
    if (sh.must_stop()) return;
    ReproCase c = sh.result().best;
    const int from = processes ? c.config.concurrency : c.config.keys;
    if (n >= from) return;
    if (processes) {
      c.config.concurrency = n;
      for (auto& e : c.schedule.plan) {
        fold_client_slots(e.fault.targets, n);
        fold_client_slots(e.fault.detail, n);
      }
    } else {
      c.config.keys = n;
    }
    c.change = std::string(processes ? "processes " : "keys ") + std::to_string(from) + " -> " + std::to_string(n);
    if (sh.evaluate(c)) return;
  }
}

// A case kept at R of N may have been lucky (many candidates, each a chance to pass at the rate): the smallest
// one is run N times more and must reach R of N again. When it does not, the case kept before it is confirmed
// instead, and so on back to the baseline (already measured). The confirmation's rate is the one reported.
void confirm_best(Shrinker& sh, const ReproCase& original) {
  auto chain = sh.chain();
  while (!chain.empty()) {
    if (sh.hard_stop()) {
      sh.result().confirmed = false;
      return;
    }
    const auto& [index, kept] = chain.back();
    ReproCase c = kept;
    c.change = "confirm [" + std::to_string(index) + "]: " + kept.change;
    if (sh.evaluate(c, false)) {
      c.change = kept.change;
      sh.adopt(c, sh.result().tried.back().index);
      sh.result().confirmed = true;
      return;
    }
    chain.pop_back();
  }
  if (sh.hard_stop()) {
    sh.result().confirmed = false;
    return;
  }
  ReproCase base = original;
  base.change = "baseline";
  sh.adopt(base, 0);
  sh.result().confirmed = true;
}

}  // namespace

ShrinkResult shrink(const ReproCase& original, const ReproduceOptions& o, ReproRunner& runner, std::ostream& log) {
  if (o.tries < 1 || o.rate < 1 || o.rate > o.tries || !(o.budget_min > 0)) {
    throw std::invalid_argument("shrink: needs 1 <= rate <= tries and a budget > 0");
  }
  Shrinker sh(o, runner, log);
  sh.result().best = original;
  sh.result().best.change = "baseline";
  sh.evaluate(sh.result().best);
  sh.result().reproducible = sh.result().tried[0].kept;
  if (!sh.result().reproducible) {
    sh.result().stopped = sh.must_stop() ? (sh.result().interrupted ? "interrupted" : "budget ran out")
                                         : "the stored run reproduced in fewer than " + std::to_string(o.rate) +
                                               " of " + std::to_string(o.tries) + " tries: nothing to shrink";
    sh.finish();
    return sh.result();
  }
  try_time_cuts(sh, o);
  try_faults(sh);
  try_slide(sh);
  try_time_cuts(sh, o);
  try_fewer(sh, true);
  try_fewer(sh, false);
  confirm_best(sh, original);
  ShrinkResult& r = sh.result();
  r.budget_exhausted = r.budget_exhausted || sh.steps_out();
  r.stopped = r.runs_failing       ? "runs failed (harness or cluster errors)"
              : r.interrupted      ? "interrupted"
              : r.budget_exhausted ? (r.confirmed ? "budget ran out" : "budget ran out before the smallest case was confirmed")
                                   : "every candidate tried";
  sh.finish();
  return r;
}

namespace {

std::string rate_text(const CandidateRecord& r) {
  std::ostringstream o;
  o << r.reproduced << " of " << r.tries;
  return o.str();
}

std::string median_cell(const CandidateRecord& r) {
  const auto m = r.median_first_s();
  if (!m) return "—";
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << *m << " s";
  return o.str();
}

std::string tried_markdown(const ShrinkResult& r, const AnomalyKind& target, const ReproduceOptions& o) {
  std::ostringstream md;
  md << "# Reproduction of " << target.str() << "\n\n"
     << "Each candidate ran up to " << o.tries << " times; it is kept when the same anomaly kind (" << target.str()
     << ") came back in at least " << o.rate << " of " << o.tries << ". Shrink: " << r.stopped << ", "
     << std::fixed << std::setprecision(0) << r.elapsed_s << " s.\n\n"
     << "| # | change | time limit | faults | processes | keys | reproduced | median first anomaly | kept | note |\n"
     << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : r.tried) {
    md << "| " << c.index << " | " << c.change << " | " << seconds_str(c.time_limit_s) << " | " << c.faults << " | "
       << c.concurrency << " | " << c.keys << " | " << rate_text(c) << " | " << median_cell(c) << " | "
       << (c.kept ? (c.index == r.best_index ? "**best**" : "yes") : "no") << " | " << c.note << " |\n";
  }
  if (!r.tried.empty() && !r.tried.front().faults_matched.empty()) {
    md << "\nThe stored run's faults repeated in each baseline try, matched by action, fault, mode and role:";
    for (const auto& [k, n] : r.tried.front().faults_matched) md << " " << k << "/" << n;
    md << ".\n";
  }
  return md.str();
}

}  // namespace

int reproduce(const std::string& run_dir_given, const ReproduceOptions& o, std::ostream& out,
              const std::string& binary) {
  if (o.tries < 1 || o.tries > 100) throw ConfigError("--tries: must be between 1 and 100");
  if (o.rate < 1 || o.rate > o.tries) {
    throw ConfigError("--rate: must be between 1 and --tries (" + std::to_string(o.tries) + ")");
  }
  if (!(o.budget_min > 0) || o.budget_min > 24 * 60) {
    throw ConfigError("--budget-min: must be > 0 and <= 1440 minutes");
  }
  std::string run_dir = run_dir_given;
  while (run_dir.size() > 1 && run_dir.back() == '/') run_dir.pop_back();
  if (!fs::is_directory(run_dir)) throw ConfigError(run_dir + " is not a run folder");
  for (const char* f : {"config.json", "results.json", "history.jsonl"}) {
    if (!fs::exists(run_dir + "/" + f)) throw ConfigError(run_dir + " has no " + f);
  }
  RunConfig cfg = read_run_config(run_dir);
  nlohmann::json results = read_json_file(run_dir + "/results.json");
  if (results.value("valid", "") != "invalid") {
    throw ConfigError(run_dir + "/results.json: the run is " + results.value("valid", "not checked") +
                      ", not invalid: there is no anomaly to reproduce");
  }
  const History h = read_history(run_dir + "/history.jsonl");
  const auto kinds = anomaly_kinds(results, &h);
  if (kinds.empty()) {
    throw ConfigError(run_dir + "/results.json: no anomaly with a \"kind\" in its invalid checkers");
  }
  const AnomalyKind target = kinds.front().kind;
  Schedule schedule;
  if (fs::exists(run_dir + "/schedule.json")) {
    schedule = read_schedule_file(run_dir + "/schedule.json");
  } else if (!cfg.nemesis.empty()) {
    throw ConfigError(run_dir + " has no schedule.json although the run had nemeses");
  }
  check_schedule_nemeses(schedule, cfg.nemesis, run_dir + "/schedule.json");

  const std::string work = run_dir + "/repro";
  if (o.dry_run) {
    out << "reproduce --dry-run: nothing run, nothing written\n"
        << "run:      " << run_dir << " (" << cfg.lock << ", " << cfg.workload << ", seed " << cfg.seed << ", "
        << fault_count(schedule) << (fault_count(schedule) == 1 ? " fault" : " faults") << " in schedule.json)\n"
        << "anomaly:  " << target.str();
    if (kinds.front().first_ns) {
      out << " (first at " << std::fixed << std::setprecision(1)
          << static_cast<double>(*kinds.front().first_ns) / 1e9 << " s)";
    }
    out << "\nsearch:   " << o.tries << " tries per candidate, kept at " << o.rate << " of " << o.tries
        << ", budget " << o.budget_min << " min\n"
        << "would write: " << work << "/ (config.json, schedule.json, command.txt, tried.md, tried.json; each run "
        << "under runs/), and the reproduction into " << run_dir << "/results.json and report.html\n";
    return kExitValid;
  }
  boost::system::error_code ec;
  fs::remove_all(work, ec);
  fs::create_directories(work);

  out << "reproduce " << run_dir << ": anomaly " << target.str();
  if (kinds.front().first_ns) {
    out << " (first at " << std::fixed << std::setprecision(1) << static_cast<double>(*kinds.front().first_ns) / 1e9
        << " s)";
  }
  out << "; " << o.tries << " tries per candidate, kept at " << o.rate << " of " << o.tries << ", budget "
      << o.budget_min << " min\n"
      << std::flush;

  InterruptGuard interrupt;
  ChildRunOptions ro;
  ro.binary = binary.empty() ? self_exe() : binary;
  ro.work = work;
  ro.target = target;
  ro.stored = &h;
  ro.budget_s = o.budget_min * 60.0;
  ChildRunRunner runner(ro, interrupt);
  ReproCase original{"baseline", cfg, schedule};
  original.config.argv.clear();
  const ShrinkResult r = shrink(original, o, runner, out);

  // The minimal case, its command, the table.
  RunConfig best = r.best.config;
  best.argv.clear();
  best.progress = true;
  write_json_file(work + "/config.json", best);
  write_json_file(work + "/schedule.json", to_json(r.best.schedule));
  const std::string command = "lockcheck run --config " + report::shell_quote(work + "/config.json") +
                              " --schedule " + report::shell_quote(work + "/schedule.json");
  write_file_atomically(work + "/command.txt", command + "\n");
  nlohmann::json tried = nlohmann::json::array();
  for (const auto& c : r.tried) tried.push_back(to_json(c));
  const CandidateRecord& base = r.tried.front();
  const CandidateRecord& min = r.tried[r.best_index];
  nlohmann::json summary = {
      {"anomaly", {{"checker", target.checker}, {"kind", target.kind}}},
      {"tries", o.tries},
      {"rate", o.rate},
      {"budget_min", o.budget_min},
      {"elapsed_s", r.elapsed_s},
      {"stopped", r.stopped},
      {"reproducible", r.reproducible},
      {"confirmed", r.confirmed},
      {"original", to_json(base)},
      {"minimal", to_json(min)},
      {"command", command},
      {"folder", "repro"},
      {"candidates", tried.size()}};
  write_json_file(work + "/tried.json", {{"summary", summary}, {"candidates", tried}});
  write_file_atomically(work + "/tried.md", tried_markdown(r, target, o));
  results["reproduction"] = summary;
  write_json_file(run_dir + "/results.json", results);
  try {
    write_report(run_dir, h);
  } catch (const std::exception& e) {
    out << "lockcheck reproduce: cannot rewrite the report: " << e.what() << "\n";
  }

  out << "\nstored run: " << target.str() << " in " << rate_text(base) << " reruns";
  if (base.median_first_s()) out << ", median first anomaly " << median_cell(base);
  out << "\n";
  if (r.reproducible) {
    out << "minimal: time limit " << seconds_str(min.time_limit_s) << " (was " << seconds_str(base.time_limit_s)
        << "), " << min.faults << " fault" << (min.faults == 1 ? "" : "s") << " (was " << base.faults << "), "
        << min.concurrency << " processes, " << min.keys << " key" << (min.keys == 1 ? "" : "s") << "; reproduced in "
        << rate_text(min) << ", median first anomaly " << median_cell(min) << "\n"
        << "run it: " << command << "\n"
        << "   or:  lockcheck rerun " << report::shell_quote(work)
        << " (runs it and says whether the anomaly came back)\n";
  }
  out << "shrink: " << r.tried.size() << " candidates, " << std::fixed << std::setprecision(0) << r.elapsed_s << " s ("
      << r.stopped << ")\n"
      << "table:  " << work << "/tried.md\nreport: " << run_dir << "/report.html\n";
  if (r.interrupted) return 128 + (interrupt.signal_number() ? interrupt.signal_number() : SIGINT);
  if (r.runs_failing) return kExitHarness;
  return r.reproducible ? kExitInvalid : kExitValid;
}

}  // namespace lockcheck
