// The WGL search (checkers/wgl.h, with the mutex model's pruning: dropped and state-resolved optional ops,
// exclusive owners, classes of interchangeable optional ops) against brute force on thousands of small random
// lock histories.
//
// This tests the search, not the semantics: the brute force uses the same model and the same reading of the
// history as the checker (so it would agree with a wrong model). Whether the checker's semantics are the
// documented ones is checked against an oracle written from the documentation, tests/checker_mutex_oracle_test.cc.
// The brute force enumerates every order of every subset of the optional ops that respects real time (an op may
// come next only if it was called before every unlinearized required op returned), with no pruning beyond a
// memo of (linearized set, holder).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <unordered_set>

#include "core/random.h"
#include "checkers/mutex.h"
#include "checkers/wgl.h"

namespace lockcheck {
namespace {

// ---- Brute force ----

struct BfOp {
  int64_t call, ret;  // ret = INT64_MAX when optional
  Process process;
  std::string f;
};

bool bf_step(int64_t holder, const BfOp& op, int64_t* next) {
  if (op.f == "acquire") {
    if (holder != -1) return false;
    *next = op.process;
    return true;
  }
  // A release or extend is illegal only while another process holds the lock (checkers/mutex.h).
  if (op.f == "release") {
    if (holder != -1 && holder != op.process) return false;
    *next = -1;
    return true;
  }
  if (op.f == "extend") {
    if (holder != -1 && holder != op.process) return false;
    *next = holder;
    return true;
  }
  return false;
}

bool bf_search(const std::vector<BfOp>& ops, uint32_t done, int64_t holder,
               std::set<std::pair<uint32_t, int64_t>>* dead) {
  int64_t min_ret = INT64_MAX;
  bool all_required = true;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (done & (1u << i)) continue;
    if (ops[i].ret != INT64_MAX) {
      all_required = false;
      min_ret = std::min(min_ret, ops[i].ret);
    }
  }
  if (all_required) return true;
  if (dead->count({done, holder})) return false;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (done & (1u << i)) continue;
    if (ops[i].call > min_ret) continue;
    int64_t next;
    if (!bf_step(holder, ops[i], &next)) continue;
    if (bf_search(ops, done | (1u << i), next, dead)) return true;
  }
  dead->insert({done, holder});
  return false;
}

// The use view: a process that got an ok acquire (and has not released since) ends its use with its release
// or with an extend that did not end ok, whatever their outcome; those are required, ending at their completion.
// For each invoke: was it made by a process that believed it held the key?
std::vector<bool> invoked_by_holder(const History& h) {
  std::set<std::pair<Process, std::string>> holding;
  std::vector<bool> by_holder(h.size(), false);
  for (size_t i = 0; i < h.size(); ++i) {
    const Op& op = h[i];
    if (op.process < 0) continue;
    if (op.is_invoke()) {
      by_holder[i] = holding.count({op.process, op.key}) > 0;
      continue;
    }
    if (op.f == "acquire" && op.is_ok()) holding.insert({op.process, op.key});
    if (op.f == "release" || (op.f == "extend" && !op.is_ok())) holding.erase({op.process, op.key});
  }
  return by_holder;
}

// Per key: linearizable?
std::map<std::string, bool> brute_force(const History& h) {
  std::map<std::string, std::vector<BfOp>> by_key;
  std::map<Process, size_t> open;  // process -> index of its pending invoke
  std::vector<int64_t> completion(h.size(), -1);
  for (size_t i = 0; i < h.size(); ++i) {
    if (h[i].is_invoke()) {
      open[h[i].process] = i;
    } else {
      auto it = open.find(h[i].process);
      if (it != open.end()) {
        completion[it->second] = static_cast<int64_t>(i);
        open.erase(it);
      }
    }
  }
  const std::vector<bool> by_holder = invoked_by_holder(h);
  for (size_t i = 0; i < h.size(); ++i) {
    const Op& op = h[i];
    if (!op.is_invoke() || op.process < 0) continue;
    if (op.f != "acquire" && op.f != "release" && op.f != "extend") continue;
    auto& v = by_key[op.key];
    const int64_t c = completion[i];
    const bool ends_use = by_holder[i] && (op.f == "release" || (op.f == "extend" && c >= 0 && !h[c].is_ok()));
    if (ends_use) {
      v.push_back(BfOp{static_cast<int64_t>(i), c >= 0 ? c : INT64_MAX, op.process, "release"});
      continue;
    }
    if (c >= 0 && h[c].is_fail()) continue;
    const bool ok = c >= 0 && h[c].is_ok();
    v.push_back(BfOp{static_cast<int64_t>(i), ok ? c : INT64_MAX, op.process, op.f});
  }
  std::map<std::string, bool> out;
  for (auto& [key, ops] : by_key) {
    std::set<std::pair<uint32_t, int64_t>> dead;
    out[key] = bf_search(ops, 0, -1, &dead);
  }
  return out;
}

// ---- Random histories ----

class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed * 0x9e3779b97f4a7c15ULL + 1) {}
  // splitmix64: the k-th value is core's derive_seed(start, k).
  uint64_t next() { return derive_seed(s_, n_++); }
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return below(100) < percent; }

 private:
  uint64_t s_;
  uint64_t n_ = 0;
};

struct Client {
  Process id;
  bool in_flight = false;
  bool effected = false;
  bool legal = false;  // outcome of the effect under the true lock
  std::string f, key;
};

// A random history from a simulated lock (ops take effect at a random point between invoke and completion),
// with noise: outcomes flipped (making it usually non-linearizable), info outcomes with and without effect,
// retirement (mostly; sometimes the process carries on, which is legal but outside the workload's
// convention), abandoned ops (an invoke never completed, then the process invokes again), crashes at the end,
// nemesis ops and ops of other f's.
History random_history(uint64_t seed, int* max_ops_per_key, int retire_pct = 85) {
  Rng rng(seed);
  const int processes = 2 + rng.below(3);
  const int keys = rng.chance(30) ? 2 : 1;
  const int target = 4 + rng.below(9);                          // lock ops to invoke
  const int noise = rng.below(4) == 0 ? 0 : 3 + rng.below(15);  // percent of flipped outcomes
  std::map<std::string, int64_t> holder;
  std::vector<Client> clients(static_cast<size_t>(processes));
  Process next_id = 0;
  for (auto& c : clients) c.id = next_id++;
  History h;
  int invoked = 0;
  int64_t t = 0;
  auto rec = [&](Process p, OpType type, const std::string& f, const std::string& key) {
    Op op;
    op.index = static_cast<int64_t>(h.size());
    op.time_ns = (t += 1000);
    op.process = p;
    op.type = type;
    op.f = f;
    op.key = key;
    h.push_back(op);
  };
  std::map<std::string, int> per_key;
  for (int guard = 0; guard < 400; ++guard) {
    bool any_in_flight = false;
    for (auto& c : clients) any_in_flight = any_in_flight || c.in_flight;
    if (invoked >= target && !any_in_flight) break;
    if (rng.chance(4)) {
      rec(kNemesis, rng.chance(50) ? OpType::kInvoke : OpType::kInfo, "partition", "");
      continue;
    }
    Client& c = clients[static_cast<size_t>(rng.below(processes))];
    if (!c.in_flight) {
      if (invoked >= target) continue;
      if (rng.chance(5)) {  // a non-lock op, completed at once
        rec(c.id, OpType::kInvoke, "read", "lock-0");
        rec(c.id, rng.chance(50) ? OpType::kOk : OpType::kInfo, "read", "lock-0");
        continue;
      }
      c.key = "lock-" + std::to_string(rng.below(keys));
      const bool holds = holder.count(c.key) && holder[c.key] == c.id;
      const int roll = rng.below(100);
      if (holds) {
        c.f = roll < 60 ? "release" : roll < 85 ? "extend" : "acquire";
      } else {
        c.f = roll < 70 ? "acquire" : roll < 90 ? "release" : "extend";
      }
      c.in_flight = true;
      c.effected = false;
      ++invoked;
      ++per_key[c.key];
      rec(c.id, OpType::kInvoke, c.f, c.key);
      continue;
    }
    if (rng.chance(3)) {
      // The client abandons the op without a completion and goes on (a malformed but legal history): the op
      // stays unpaired, like a crash, and the next invoke of the process must not pair with it.
      c.in_flight = false;
      continue;
    }
    if (!c.effected) {
      // The linearization point under the true lock.
      c.effected = true;
      int64_t cur = holder.count(c.key) ? holder[c.key] : -1;
      int64_t next = cur;
      BfOp op{0, 0, c.id, c.f};
      c.legal = bf_step(cur, op, &next);
      if (c.legal) {
        if (next == -1)
          holder.erase(c.key);
        else
          holder[c.key] = next;
      }
      continue;
    }
    // Completion.
    OpType type = c.legal ? OpType::kOk : OpType::kFail;
    if (rng.chance(noise)) type = type == OpType::kOk ? OpType::kFail : OpType::kOk;
    if (rng.chance(20)) type = OpType::kInfo;
    rec(c.id, type, c.f, c.key);
    c.in_flight = false;
    if (type == OpType::kInfo && rng.chance(retire_pct)) c.id = next_id++;  // retired; else it carries on
  }
  // Ops still in flight (the guard ran out) never complete: crashed clients. Sometimes crash some on purpose.
  *max_ops_per_key = 0;
  for (auto& [k, n] : per_key) *max_ops_per_key = std::max(*max_ops_per_key, n);
  return h;
}

std::map<std::string, bool> checker_per_key(const CheckResult& r) {
  std::map<std::string, bool> out;
  for (auto& [key, s] : r.stats["per_key"].items()) {
    EXPECT_NE(s["verdict"], "unknown") << key;
    out[key] = s["verdict"] == "valid";
  }
  return out;
}

TEST(MutexCheckerRandom, AgreesWithBruteForce) {
  MutexChecker checker;
  CheckOptions opts;
  int valid = 0, invalid = 0, with_info = 0, non_sequential = 0;
  for (uint64_t seed = 1; seed <= 6000; ++seed) {
    int max_ops = 0;
    History h = random_history(seed, &max_ops);
    ASSERT_LE(max_ops, 16);
    CheckResult r = run_checker(checker, h, opts);
    ASSERT_NE(r.valid, Validity::kUnknown) << "seed " << seed << ": " << r.summary;
    std::map<std::string, bool> expected = brute_force(h);
    std::map<std::string, bool> got = checker_per_key(r);
    ASSERT_EQ(expected, got) << "seed " << seed << "\n"
                             << [&] {
                                  std::string s;
                                  for (const Op& op : h) s += nlohmann::json(op).dump() + "\n";
                                  return s;
                                }();
    bool all = true;
    for (auto& [k, v] : expected) all = all && v;
    (all ? valid : invalid)++;
    EXPECT_EQ(r.valid, all ? Validity::kValid : Validity::kInvalid);
    if (!all) {
      EXPECT_FALSE(r.anomalies.empty());
    }
    bool has_info = false;
    for (const Op& op : h) has_info = has_info || (op.is_info() && op.is_client());
    with_info += has_info;
    for (auto& [k, s] : r.stats["per_key"].items()) non_sequential += s["non_sequential_processes"] > 0 ? 1 : 0;
  }
  // The generator must exercise both verdicts, info ops, and keys with processes searched without pruning.
  EXPECT_GT(valid, 1000);
  EXPECT_GT(invalid, 400);  // a release or extend by a non-holder is legal on a free lock (retried releases)
  EXPECT_GT(with_info, 1000);
  EXPECT_GT(non_sequential, 200);
  std::printf("valid %d invalid %d with info %d non-sequential keys %d\n", valid, invalid, with_info, non_sequential);
}

// The generic (unpruned) search must agree with the pruned one, on the same partitions.
TEST(MutexCheckerRandom, PrunedAndGenericSearchAgree) {
  const MutexModel model;
  for (uint64_t seed = 10001; seed <= 13000; ++seed) {
    int max_ops = 0;
    History h = random_history(seed, &max_ops);
    std::vector<int64_t> pairs = pair_index(h);
    const std::vector<bool> by_holder = invoked_by_holder(h);
    std::map<std::string, std::vector<wgl::LinOp>> by_key;
    for (size_t i = 0; i < h.size(); ++i) {
      const Op& op = h[i];
      if (!op.is_invoke() || !op.is_client() || mutex_op_kind(op.f) < 0) continue;
      wgl::LinOp lo;
      lo.call = static_cast<int64_t>(i);
      lo.process = op.process;
      lo.kind = static_cast<int16_t>(mutex_op_kind(op.f));
      const bool ends_use =
          by_holder[i] && (op.f == "release" || (op.f == "extend" && pairs[i] >= 0 && !h[pairs[i]].is_ok()));
      if (ends_use) {
        lo.kind = MutexModel::kRelease;
        if (pairs[i] >= 0) lo.ret = pairs[i];
        by_key[op.key].push_back(lo);
        continue;
      }
      if (pairs[i] >= 0 && h[pairs[i]].is_fail()) continue;
      if (pairs[i] >= 0 && h[pairs[i]].is_ok()) lo.ret = pairs[i];
      by_key[op.key].push_back(lo);
    }
    const std::map<std::string, bool> expected = brute_force(h);
    for (auto& [key, ops] : by_key) {
      auto generic = wgl::search(ops, model, wgl::SearchLimits{});  // sequential flags all false: no pruning
      ASSERT_EQ(generic.outcome == wgl::Outcome::kLinearizable, expected.at(key)) << "seed " << seed << " " << key;
    }
  }
}

// Processes that keep their id after an info op (bench/mutex_bench --no-retire): their optional ops are searched
// as classes of interchangeable ops; the verdicts must still be those of brute force.
TEST(MutexCheckerRandom, AgreesWithBruteForceWithoutRetirement) {
  MutexChecker checker;
  CheckOptions opts;
  int valid = 0, invalid = 0, classed = 0;
  for (uint64_t seed = 20001; seed <= 24000; ++seed) {
    int max_ops = 0;
    History h = random_history(seed, &max_ops, /*retire_pct=*/0);
    ASSERT_LE(max_ops, 16);
    CheckResult r = run_checker(checker, h, opts);
    ASSERT_NE(r.valid, Validity::kUnknown) << "seed " << seed << ": " << r.summary;
    const std::map<std::string, bool> expected = brute_force(h);
    ASSERT_EQ(expected, checker_per_key(r)) << "seed " << seed << "\n"
                                            << [&] {
                                                 std::string s;
                                                 for (const Op& op : h) s += nlohmann::json(op).dump() + "\n";
                                                 return s;
                                               }();
    bool all = true;
    for (auto& [k, v] : expected) all = all && v;
    (all ? valid : invalid)++;
    for (auto& [k, st] : r.stats["per_key"].items()) classed += st["optional_classes"] > 0 ? 1 : 0;
  }
  EXPECT_GT(valid, 500);
  EXPECT_GT(invalid, 300);
  EXPECT_GT(classed, 1000);
  std::printf("valid %d invalid %d keys with optional classes %d\n", valid, invalid, classed);
}

}  // namespace
}  // namespace lockcheck
