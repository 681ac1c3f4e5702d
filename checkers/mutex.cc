#include "checkers/mutex.h"

#include <algorithm>
#include <chrono>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "checkers/format.h"
#include "core/flat_table.h"
#include "core/huge_pages.h"

namespace lockcheck {

bool MutexModel::step(const State& s, const wgl::LinOp& op, State* next) const {
  switch (op.kind) {
    case kAcquire:
      if (s != kFree) return false;
      *next = op.process;
      return true;
    // A release or extend that takes effect is illegal only while another process holds the lock (then it
    // removed or extended someone else's lock, or the service granted the lock twice). On a free lock it is a
    // no-op: the process removed or extended its own key that the model no longer counts as a hold (its use
    // ended at an earlier release, e.g. one that failed and was retried), or nothing (the key had expired).
    // An optional release is kept to held by p: applying it to a free lock would change nothing, and the
    // stricter step keeps its role kResolvedByState sound (below).
    case kRelease:
      if (s != op.process && (s != kFree || op.optional())) return false;
      *next = kFree;
      return true;
    case kExtend:
      if (s != op.process && s != kFree) return false;
      *next = s;
      return true;
    default: return false;
  }
}

// Held by p: every acquire is illegal, and so is every release or extend by another process.
Process MutexModel::exclusive_owner(const State& s) const {
  return s == kFree ? wgl::kNoOwner : static_cast<Process>(s);
}

// Why the roles are sound, in a sequential partition (each process's ops are ordered in real time, so an
// optional op is the last op of its process on the key, and every other op of that process returned before it
// was called):
//  - acquire by p: if it takes effect the lock is held by p, where only p's ops are legal; p has no op left
//    that could come after it, so nothing can be linearized after it. It can only be last, where it helps no
//    required op: drop it.
//  - extend: never changes the state, so leaving it out never makes another op illegal: drop it.
//  - release by p: an optional one is legal exactly when the lock is held by p (see step). Once p's other ops
//    are linearized, no reachable state is held by p again unless this release is still pending and the state
//    already is held by p (only an acquire by p leads there, and p has none left). So (a) rejected now =>
//    rejected forever, and (b) after it is applied the state is never held by p again: its pending-ness is a
//    function of the state.
wgl::OptionalRole MutexModel::optional_role(const wgl::LinOp& op) const {
  switch (op.kind) {
    case kAcquire:
    case kExtend: return wgl::OptionalRole::kDrop;
    case kRelease: return wgl::OptionalRole::kResolvedByState;
    default: return wgl::OptionalRole::kGeneric;
  }
}

int mutex_op_kind(const std::string& f) {
  if (f.size() == 7) {
    if (f == "acquire") return MutexModel::kAcquire;
    if (f == "release") return MutexModel::kRelease;
  } else if (f.size() == 6 && f == "extend") {
    return MutexModel::kExtend;
  }
  return -1;
}

namespace {

struct MutexKeyOps {
  Atom key;
  std::vector<wgl::LinOp> ops;
  int64_t failed = 0;  // fail completions, removed
};

// The open invoke of each client process during one pass over a history: a flat table for the usual small
// process ids, a hash map beyond.
class OpenInvokes {
 public:
  struct Ref {
    int32_t key = -1;  // -1: no open lock op (none, or a non-lock op)
    int64_t pos = -1;  // index into the key's ops
  };
  void put(Process p, Ref r) {
    if (p >= 0 && p < kDenseLimit) {
      if (static_cast<size_t>(p) >= dense_.size()) resize_huge(&dense_, static_cast<size_t>(p) + 1);
      dense_[static_cast<size_t>(p)] = r;
    } else {
      sparse_[p] = r;
    }
  }
  Ref take(Process p) {
    Ref r;
    if (p >= 0 && p < kDenseLimit) {
      if (static_cast<size_t>(p) < dense_.size()) std::swap(r, dense_[static_cast<size_t>(p)]);
    } else {
      auto it = sparse_.find(p);
      if (it != sparse_.end()) {
        r = it->second;
        sparse_.erase(it);
      }
    }
    return r;
  }

 private:
  static constexpr Process kDenseLimit = 1 << 20;
  std::vector<Ref> dense_;
  std::unordered_map<Process, Ref> sparse_;
};

// Time of the first release invoked by process p on key after history index `after`; end_ns when none.
int64_t hold_end_ns(const History& h, Process p, const std::string& key, int64_t after, int64_t end_ns,
                    int64_t* release_index) {
  *release_index = -1;
  for (size_t i = static_cast<size_t>(after) + 1; i < h.size(); ++i) {
    const Op& op = h[i];
    if (op.process == p && op.is_invoke() && op.key == key && op.f == "release") {
      *release_index = static_cast<int64_t>(i);
      return op.time_ns;
    }
  }
  return end_ns;
}

nlohmann::json describe_violation(const History& h, const std::vector<int64_t>& pairs, const MutexKeyOps& ko,
                                  const wgl::SearchResult<MutexModel::State>& r) {
  const wgl::LinOp& s = ko.ops[static_cast<size_t>(r.stuck_op)];
  const Process q = s.process;
  const int64_t holder = r.stuck_state;
  const int64_t end_ns = h.empty() ? 0 : h.back().time_ns;
  const std::string& key = ko.key;

  std::vector<int64_t> ops_involved = {s.call, s.ret};
  std::vector<int64_t> processes = {q};

  // The holder's acquire on that path: its latest ok acquire called before the stuck op returned (an info one
  // only when it has none).
  const wgl::LinOp* held_by = nullptr;
  if (holder != MutexModel::kFree) {
    for (const wgl::LinOp& o : ko.ops) {
      if (o.process != holder || o.kind != MutexModel::kAcquire || o.call >= s.ret) continue;
      const bool better = held_by == nullptr || (held_by->optional() && !o.optional()) ||
                          (held_by->optional() == o.optional() && o.call > held_by->call);
      if (better) held_by = &o;
    }
    if (holder != q) processes.insert(processes.begin(), static_cast<int64_t>(holder));
  }

  nlohmann::json a = nlohmann::json::object();
  a["key"] = key;
  std::string desc;
  int64_t from_ns = h[static_cast<size_t>(s.call)].time_ns;
  int64_t to_ns = h[static_cast<size_t>(s.ret)].time_ns;
  std::string kind = "no-linearization";

  if (held_by != nullptr) {
    ops_involved.push_back(held_by->call);
    if (!held_by->optional()) ops_involved.push_back(held_by->ret);
  }

  if (s.kind == MutexModel::kAcquire && holder != MutexModel::kFree && holder != q && held_by != nullptr) {
    const int64_t p_start = held_by->optional() ? h[static_cast<size_t>(held_by->call)].time_ns
                                                : h[static_cast<size_t>(held_by->ret)].time_ns;
    int64_t p_release = -1, q_release = -1;
    const int64_t p_end = hold_end_ns(h, static_cast<Process>(holder), key,
                                      held_by->optional() ? held_by->call : held_by->ret, end_ns, &p_release);
    const int64_t q_start = h[static_cast<size_t>(s.ret)].time_ns;
    const int64_t q_end = hold_end_ns(h, q, key, s.ret, end_ns, &q_release);
    for (int64_t rel : {p_release, q_release}) {
      if (rel < 0) continue;
      ops_involved.push_back(rel);
      if (pairs[static_cast<size_t>(rel)] >= 0) ops_involved.push_back(pairs[static_cast<size_t>(rel)]);
    }
    const int64_t lo = std::max(p_start, q_start), hi = std::min(p_end, q_end);
    const int64_t p_acquired_op = held_by->optional() ? held_by->call : held_by->ret;
    // p's lease: from its acquire's ok, as long as the validity it reported, stretched by its ok extends.
    std::optional<int64_t> p_lease_end;
    if (!held_by->optional() && h[static_cast<size_t>(held_by->ret)].validity_ms) {
      p_lease_end = p_start + *h[static_cast<size_t>(held_by->ret)].validity_ms * 1000000;
      for (const wgl::LinOp& o : ko.ops) {
        if (o.process != holder || o.kind != MutexModel::kExtend || o.optional() || o.call < held_by->ret) continue;
        const Op& done = h[static_cast<size_t>(o.ret)];
        if (done.validity_ms && done.time_ns <= *p_lease_end)
          p_lease_end = std::max(*p_lease_end, done.time_ns + *done.validity_ms * 1000000);
      }
    }
    std::string p_released = "had not released it by the end of the history";
    if (p_release >= 0) {
      const int64_t c = pairs[static_cast<size_t>(p_release)];
      p_released = "released it at t=" + format_time_s(p_end) + " (op " + std::to_string(p_release);
      if (c >= 0 && !h[static_cast<size_t>(c)].is_ok()) {
        p_released += std::string(", which ended ") + (h[static_cast<size_t>(c)].is_fail() ? "fail" : "info");
        if (!h[static_cast<size_t>(c)].error.empty()) p_released += ": " + h[static_cast<size_t>(c)].error;
      }
      p_released += ")";
    }
    if (hi > lo) {
      from_ns = lo;
      to_ns = hi;
      int64_t stalled_ns = 0;
      if (p_release >= 0) {
        const nlohmann::json& v = h[static_cast<size_t>(p_release)].value;
        if (v.is_object() && v.contains("stalled_ms") && v["stalled_ms"].is_number_integer())
          stalled_ns = v["stalled_ms"].get<int64_t>() * 1000000;
      }
      if (p_lease_end && q_start >= *p_lease_end && stalled_ns > 0 && p_end - stalled_ns <= *p_lease_end) {
        // The workload planned its release inside the lease, and the harness's own thread woke too late (a
        // loaded machine): not the lock's fault, and not a fault under test. Unknown, never invalid.
        kind = "harness-stall";
        desc = process_name(holder) + "'s release of " + key +
               " was planned inside its lease (to t=" + format_time_s(*p_lease_end) +
               ") but the harness's thread woke " + format_duration_ms(stalled_ns) +
               " late (the machine is overloaded), so it overlapped " + process_name(q) +
               "'s hold from t=" + format_time_s(q_start) + " (op " + std::to_string(s.ret) +
               "): not a failure of the lock; rerun on a less loaded machine";
      } else if (p_lease_end && q_start >= *p_lease_end) {
        // The lock was free again by Redlock's own terms: p outlived its lease (a paused or slow holder).
        kind = "stale-holder";
        desc = process_name(holder) + " kept using " + key +
               " after its lease ended at t=" + format_time_s(*p_lease_end) + " (acquired at op " +
               std::to_string(p_acquired_op) + "), while " + process_name(q) +
               " held it from t=" + format_time_s(q_start) + " (op " + std::to_string(s.ret) + "): both used it for " +
               format_duration_ms(hi - lo) + "; " + process_name(holder) + " " + p_released;
      } else {
        kind = "double-grant";
        desc = process_name(holder) + " and " + process_name(q) + " both held " + key + " for " +
               format_duration_ms(hi - lo) + " from t=" + format_time_s(lo) + ": " + process_name(q) +
               "'s acquire (op " + std::to_string(s.ret) + ") succeeded while " + process_name(holder) +
               " held the lock from op " + std::to_string(p_acquired_op) +
               (p_lease_end ? " within its lease (to t=" + format_time_s(*p_lease_end) + ")" : std::string()) +
               "; " + process_name(holder) + " " + p_released;
        // A third process's ok release that overlapped p's hold before q's grant: the likely way the lock became
        // free (a release that deletes whatever lock is there, not its own). Named, so the reader does not have to
        // find it among the concurrent ops.
        const wgl::LinOp* culprit = nullptr;
        for (const wgl::LinOp& o : ko.ops) {
          if (o.kind != MutexModel::kRelease || o.optional() || o.process == holder || o.process == q) continue;
          if (h[static_cast<size_t>(o.call)].time_ns >= q_start || h[static_cast<size_t>(o.ret)].time_ns <= p_start)
            continue;
          if (culprit == nullptr || o.ret > culprit->ret) culprit = &o;
        }
        if (culprit != nullptr) {
          ops_involved.push_back(culprit->call);
          ops_involved.push_back(culprit->ret);
          processes.push_back(static_cast<int64_t>(culprit->process));
          desc += "; in between, " + process_name(culprit->process) + "'s release of " + key + " (op " +
                  std::to_string(culprit->ret) + ") answered ok at t=" +
                  format_time_s(h[static_cast<size_t>(culprit->ret)].time_ns) + " while " + process_name(holder) +
                  " held it: if that release removed " + process_name(holder) + "'s lock, it made room for " +
                  process_name(q) + "'s grant";
        }
      }
    } else {
      desc = process_name(q) + "'s acquire of " + key + " (op " + std::to_string(s.ret) +
             ", ok at t=" + format_time_s(q_start) + ") cannot be ordered after " + process_name(holder) +
             "'s hold of it (acquired at op " + std::to_string(p_acquired_op) +
             "): no order of the ops consistent with real time explains both";
    }
  } else if (s.kind == MutexModel::kAcquire) {
    desc = process_name(q) + "'s acquire of " + key + " (op " + std::to_string(s.ret) +
           ", ok at t=" + format_time_s(to_ns) + ") " +
           (holder == q ? std::string("succeeded while ") + process_name(q) + " already held it"
                        : std::string("has no place in any order of the ops consistent with real time"));
  } else {
    // A release or extend is illegal only while another process holds the lock.
    const Op& done = h[static_cast<size_t>(s.ret)];
    const std::string outcome = done.is_ok() ? "succeeded" : done.is_fail() ? "ended fail" : "ended info";
    desc = process_name(q) + "'s " + h[static_cast<size_t>(s.call)].f.str() + " of " + key + " " +
           outcome + " (op " + std::to_string(s.ret) + " at t=" + format_time_s(to_ns) + ") but " +
           process_name(q) + " did not hold it in any order consistent with real time (" +
           (holder == MutexModel::kFree ? std::string("it was free")
                                        : "it was held by " + process_name(holder) +
                                              (held_by != nullptr ? " from op " + std::to_string(held_by->call)
                                                                  : std::string()) +
                                              ": it removed or extended another process's lock, or the lock was "
                                              "granted twice") +
           ")";
  }

  // The ops concurrent with the stuck one (the report shows them around it).
  size_t concurrent = 0;
  for (const wgl::LinOp& o : ko.ops) {
    if (&o == &s || o.call >= s.ret || o.ret <= s.call) continue;
    if (++concurrent > 16) break;
    ops_involved.push_back(o.call);
    const int64_t c = pairs[static_cast<size_t>(o.call)];
    if (c >= 0) ops_involved.push_back(c);
  }
  std::sort(ops_involved.begin(), ops_involved.end());
  ops_involved.erase(std::unique(ops_involved.begin(), ops_involved.end()), ops_involved.end());

  a["kind"] = kind;
  a["description"] = desc;
  a["ops"] = ops_involved;
  a["processes"] = processes;
  a["from_ns"] = from_ns;
  a["to_ns"] = to_ns;
  return a;
}

}  // namespace

CheckResult MutexChecker::check(const History& h, const CheckOptions& opts) const {
  const auto started = std::chrono::steady_clock::now();
  static const Atom kAcquire("acquire"), kRelease("release"), kExtend("extend");
  CheckResult result;
  result.checker = name();

  // Partition the lock ops by key in one pass, pairing each completion with its process's open invoke as
  // pair_index does (in order per process; an invoke overwritten by a later one stays unpaired).
  std::vector<MutexKeyOps> keys;
  PopulateAhead populate_first;  // the first key's ops (reserved for the whole history, below)
  std::unordered_map<Atom, size_t> key_ids;
  OpenInvokes open;
  // (process, key) pairs whose last completed lock op left the process believing it holds the key (an ok
  // acquire, then ok extends): its release, and an extend that did not end ok, end its use of the lock.
  FlatTable<uint8_t> believes_held;
  auto held_key = [](Process p, int32_t key) {
    return (static_cast<uint64_t>(p) << 24) ^ static_cast<uint64_t>(static_cast<uint32_t>(key));
  };
  int64_t lock_ops = 0;
  size_t last_key = 0;  // most histories have one or a few keys: try the previous op's first
  for (size_t i = 0; i < h.size(); ++i) {
    const Op& op = h[i];
    if (!op.is_client() || op.is_notice()) continue;  // a loss notice opens and closes nothing
    if (!op.is_invoke()) {
      const OpenInvokes::Ref ref = open.take(op.process);
      if (ref.key < 0) continue;
      MutexKeyOps& ko = keys[static_cast<size_t>(ref.key)];
      wgl::LinOp& lo = ko.ops[static_cast<size_t>(ref.pos)];
      const bool holder = believes_held.contains(held_key(op.process, ref.key));
      if (lo.kind == MutexModel::kAcquire && op.is_ok()) believes_held[held_key(op.process, ref.key)] = 1;
      if (lo.kind == MutexModel::kRelease) believes_held.erase(held_key(op.process, ref.key));
      if (!holder && lo.kind != MutexModel::kAcquire) {
        // Not a holder's op (no ok acquire of its own before it): a failed one is a no-op, as before.
        if (op.is_fail()) {
          lo.kind = -1;
          ++ko.failed;
        } else if (op.is_ok()) {
          lo.ret = static_cast<int64_t>(i);
        }
      } else if (lo.kind == MutexModel::kExtend && !op.is_ok()) {
        believes_held.erase(held_key(op.process, ref.key));
        // An extend that failed (or whose outcome is unknown) ends the use too: the holder stops using the lock
        // the moment its extend fails (the renew workload does; so does every careful client).
        lo.kind = MutexModel::kRelease;
        lo.ret = static_cast<int64_t>(i);
      } else if (lo.kind == MutexModel::kRelease) {
        // The use view: a holder stops using the lock when it starts to release it, so its hold ends within the
        // release whatever the outcome (a release that failed because the lock had already expired, or that
        // timed out, still ended the use). Whether the lock was lost before that is the lease checker's call.
        lo.ret = static_cast<int64_t>(i);
      } else if (op.is_fail()) {
        lo.kind = -1;  // removed below
        ++ko.failed;
      } else if (op.is_ok()) {
        lo.ret = static_cast<int64_t>(i);
      }
      continue;
    }
    const int kind = op.f == kAcquire   ? MutexModel::kAcquire
                     : op.f == kRelease ? MutexModel::kRelease
                     : op.f == kExtend  ? MutexModel::kExtend
                                        : -1;  // mutex_op_kind, by pointer compares
    if (kind < 0) {
      open.put(op.process, OpenInvokes::Ref{});  // a completion must not pair with an earlier lock op
      continue;
    }
    if (keys.empty() || keys[last_key].key != op.key) {
      auto it = key_ids.find(op.key);
      if (it == key_ids.end()) {
        it = key_ids.emplace(op.key, keys.size()).first;
        keys.push_back(MutexKeyOps{op.key, {}, 0});
        // Most histories have one key: its ops are at most one per invoke, and a history of n entries can hold
        // more than n / 2 invokes (those left open at the end), so the bound is h.size() - i (the entries from
        // this one on). Reserved address space only: the pages are touched as the ops come, and the vector is
        // never moved (a move of a million ops doubles it, copies 32 MB and touches 64 MB of new pages).
        if (keys.size() == 1) {
          keys.back().ops.reserve(h.size() - i);
          advise_huge_pages(keys.back().ops);
        }
      }
      last_key = it->second;
    }
    MutexKeyOps& ko = keys[last_key];
    ++lock_ops;
    wgl::LinOp lo;
    lo.call = static_cast<int64_t>(i);
    lo.process = op.process;
    lo.kind = static_cast<int16_t>(kind);
    open.put(op.process, OpenInvokes::Ref{static_cast<int32_t>(last_key), static_cast<int64_t>(ko.ops.size())});
    if (last_key == 0) populate_first.fill(ko.ops);
    ko.ops.push_back(lo);
  }
  // Removed: failed ops, and optional extends of every process (an extend never changes the state, so leaving
  // one out never makes another op illegal; the search drops them itself only for sequential processes).
  int64_t extends_dropped = 0;
  for (MutexKeyOps& ko : keys) {
    const size_t before = ko.ops.size();
    ko.ops.erase(std::remove_if(
                     ko.ops.begin(), ko.ops.end(),
                     [](const wgl::LinOp& o) { return o.kind < 0 || (o.kind == MutexModel::kExtend && o.optional()); }),
                 ko.ops.end());
    extends_dropped += static_cast<int64_t>(before - ko.ops.size()) - ko.failed;
  }
  std::sort(keys.begin(), keys.end(), [](const MutexKeyOps& a, const MutexKeyOps& b) { return a.key < b.key; });

  wgl::SearchLimits limits;
  limits.deadline = started + opts.timeout;
  limits.max_cache_bytes = options_.max_cache_bytes;
  const MutexModel model;

  std::vector<int64_t> pairs;  // computed only to describe a violation
  nlohmann::json key_stats = nlohmann::json::object();
  Validity verdict = Validity::kValid;
  std::vector<std::string> invalid_keys, unknown_reasons;
  size_t total_cache = 0;
  for (MutexKeyOps& ko : keys) {
    const auto key_started = std::chrono::steady_clock::now();
    const size_t non_sequential = wgl::set_sequential_flags(&ko.ops);
    const wgl::SearchResult<MutexModel::State> r = wgl::search(ko.ops, model, limits);
    const double key_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - key_started).count();
    int64_t required = 0;
    for (const wgl::LinOp& o : ko.ops) required += o.optional() ? 0 : 1;

    Validity v = Validity::kValid;
    switch (r.outcome) {
      case wgl::Outcome::kLinearizable: break;
      case wgl::Outcome::kNotLinearizable: {
        if (pairs.empty()) pairs = pair_index(h);
        nlohmann::json a = describe_violation(h, pairs, ko, r);
        if (a["kind"] == "harness-stall") {
          v = Validity::kUnknown;
          unknown_reasons.push_back(a["description"].get<std::string>());
        } else {
          v = Validity::kInvalid;
          invalid_keys.push_back(ko.key);
        }
        result.anomalies.push_back(std::move(a));
        break;
      }
      case wgl::Outcome::kTimeout:
        v = Validity::kUnknown;
        unknown_reasons.push_back("search budget (" + std::to_string(opts.timeout.count()) + " ms) exhausted on " +
                                  ko.key + " after " + std::to_string(r.steps) + " steps");
        break;
      case wgl::Outcome::kMemoryCap:
        v = Validity::kUnknown;
        unknown_reasons.push_back("search cache reached its cap (" + std::to_string(options_.max_cache_bytes >> 20) +
                                  " MiB) on " + ko.key);
        break;
    }
    verdict = merge(verdict, v);
    total_cache += r.cache_entries;
    key_stats[ko.key.str()] = {{"verdict", to_string(v)},
                               {"ops", static_cast<int64_t>(ko.ops.size()) + ko.failed},
                               {"failed_removed", ko.failed},
                               {"required", required},
                               {"optional", static_cast<int64_t>(ko.ops.size()) - required},
                               {"optional_pruned", r.dropped_optional},
                               {"non_sequential_processes", non_sequential},
                               {"slots", r.slots},
                               {"optional_classes", r.classes},
                               {"steps", r.steps},
                               {"max_depth", r.max_depth},
                               {"cache_entries", r.cache_entries},
                               {"cache_bytes", r.cache_bytes},
                               {"elapsed_ms", key_ms}};
  }

  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  result.valid = verdict;
  result.stats = {{"lock_ops", lock_ops},     {"optional_extends_dropped", extends_dropped},
                  {"keys", keys.size()},      {"cache_entries", total_cache},
                  {"elapsed_ms", elapsed_ms}, {"per_key", key_stats}};

  if (keys.empty()) {
    result.valid = Validity::kUnknown;
    result.summary = "nothing checked: no lock operations in the history";
  } else if (verdict == Validity::kInvalid) {
    for (const auto& a : result.anomalies) {
      if (a["kind"] == "harness-stall") continue;
      result.summary = a["description"].get<std::string>();
      break;
    }
    if (invalid_keys.size() > 1) {
      result.summary += " (and " + std::to_string(invalid_keys.size() - 1) + " more key" +
                        (invalid_keys.size() > 2 ? "s" : "") + " with no linearization)";
    }
  } else if (verdict == Validity::kUnknown) {
    result.summary = "could not decide: " + unknown_reasons[0];
    if (unknown_reasons.size() > 1) result.summary += " (and " + std::to_string(unknown_reasons.size() - 1) + " more)";
  } else {
    result.summary = "all " + std::to_string(lock_ops) + " lock ops on " + std::to_string(keys.size()) + " key" +
                     (keys.size() > 1 ? "s" : "") + " are linearizable as an owner-aware mutex";
  }
  return result;
}

std::unique_ptr<Checker> make_mutex_checker() { return std::make_unique<MutexChecker>(); }

// This checker's line in the registry (checkers/registry.cc): its name, what `lockcheck list` says of it, its factory.
CheckerInfo mutex_checker() {
  return {"mutex", "linearizability of acquire/release/extend against an owner-aware mutex, per key (WGL search)",
          make_mutex_checker};
}

}  // namespace lockcheck
