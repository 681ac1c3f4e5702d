// Linearizability search, generic over a small sequential model: Wing & Gong's backtracking with Lowe's
// memoisation (WGL).
//
// The history of one partition (e.g. one lock key) is given as operations with a call position and a return
// position (history indices). Call entries sit in a doubly-linked list in history order; the return entries
// are a sorted array walked by a cursor, R = the first return entry whose op is not yet linearized. The search
// scans the list from its head: a call entry before R whose op the model accepts is "lifted" (linearized:
// unlinked, its undo record pushed on an explicit stack, the scan restarts at the head); reaching R means no op
// that is allowed to come next works, so the search backtracks (pops the last lift, restores the state,
// relinks it, and continues the scan after it). Success when every required op is linearized. No recursion,
// no allocation per step (the stack and the cache grow geometrically).
//
// Optional ops (info, or invoked and never completed) have no return entry: they may be linearized at any point
// after their call, or never.
//
// Classes of optional ops. Optional ops that are not resolved by the state (below) are grouped by (process,
// kind, arg): two visible members of a class are interchangeable (same effect, and both may be linearized at
// any later point), so the search only ever tries the earliest unused member of each class, and the set of
// used members is a prefix of the class in call order: the state key holds one count per class instead of one
// bit per op. These ops are not in the call list either (the scan tries each class's next member after the
// list), so thousands of pending info ops of processes that keep their id after an info op (not retired) cost
// the scan a few classes, not thousands of entries.
//
// Memoisation. Every op whose return entry lies before R is linearized in any search state, and an op whose
// call lies after R is not, so a state is fully described by (R, the linearized ops among those open at R,
// model state). Open ops get small "slots" by interval colouring (at most the concurrency of the partition),
// so the key is (ordinal of R, a bitmask of slots, the model state as raw words): a few words, not a bitset
// of the whole history. The cache keeps only states whose subtree failed after real work (a state is inserted
// when the search backtracks out of it after having lifted at least one child); states that fail at once are
// cheap to rediscover and are not stored. A state on the current path cannot recur below itself (the set of
// linearized ops only grows), so this is as exact as inserting on entry.
//
// Model-aware pruning, applied to the ops whose process is "sequential" in the partition (LinOp::sequential:
// the process's ops are ordered in real time, each returning before the next is called, so an optional op is
// its process's last). Other processes' ops are searched without pruning, so one misbehaving process does not
// cost the rest of the partition its pruning.
//  - optional ops the model marks kDrop are removed before the search;
//  - optional ops marked kResolvedByState are left out of the cache key, and are unlinked for the rest of the
//    path when the model rejects them once they are visible (they are dead, by the model's contract);
//  - an op whose result state belongs exclusively to its own process (exclusive_owner) is tried only when it is
//    the op of R: otherwise the op of R (another process's: the owner's only open op is this one) could never
//    be linearized before its return, because the owner has no other op callable before R. (Proofs in
//    mutex.cc's model comments; checked by the randomized brute-force test.)
//
// Model concept (all pure, deterministic):
//   using State = ...;  // trivially copyable with unique object representations (compared and hashed as bytes)
//   State init() const;
//   bool step(const State& s, const LinOp& op, State* next) const;   // false: op is illegal in s
//   Process exclusive_owner(const State& s) const;  // p if in s every op of every other process is illegal
//                                                   // (for every other process q, step(s, op of q) fails); else
//                                                   kNoOwner
//   OptionalRole optional_role(const LinOp& op) const;  // consulted for optional ops of sequential partitions only
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <queue>
#include <tuple>
#include <type_traits>
#include <vector>

#include "checkers/state_cache.h"
#include "core/huge_pages.h"
#include "core/op.h"

namespace lockcheck {
namespace wgl {

constexpr int64_t kNoReturn = std::numeric_limits<int64_t>::max();
constexpr Process kNoOwner = std::numeric_limits<Process>::min();

// One operation of a partition.
struct LinOp {
  int64_t call = 0;         // history index of the invoke (distinct from every other call and return)
  int64_t ret = kNoReturn;  // history index of the ok completion; kNoReturn for an optional op
  Process process = 0;
  int16_t kind = 0;  // model-defined (e.g. acquire / release / extend)
  // True only if every op of this process in the partition is ordered in real time (each returns before the
  // process's next op is called). Enables the pruning above for this op.
  bool sequential = false;
  int64_t arg = 0;  // model-defined (e.g. a token)
  bool optional() const { return ret == kNoReturn; }
};

// Sets each op's `sequential` flag: true for the ops of processes whose ops in `ops` are ordered in real time.
// Returns the number of processes that are not. O(n) expected.
size_t set_sequential_flags(std::vector<LinOp>* ops);

// What an optional op can do for the search (sequential partitions only; the model's contract):
enum class OptionalRole {
  kGeneric,  // searched like any op; stays in the cache key once linearized
  kDrop,     // can never help a required op to be linearized: removed before the search
  // Once the op is visible (its call is before R) and all other ops of its process are linearized: (a) if the
  // model rejects it in the current state, it rejects it in every state reachable without it; (b) after it is
  // applied, no reachable state accepts it again. Then whether it is still pending is a function of the model
  // state, and it need not be in the cache key.
  kResolvedByState,
};

enum class Outcome { kLinearizable, kNotLinearizable, kTimeout, kMemoryCap };

struct SearchLimits {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  size_t max_cache_bytes = size_t{512} << 20;
};

template <class State>
struct SearchResult {
  Outcome outcome = Outcome::kLinearizable;
  // For kNotLinearizable: the deepest point the search reached. stuck_op is the required op (index into the
  // input vector) that could not be linearized before its return there; stuck_state is the model state in which
  // the search gave up on it; last_op is the op linearized last on that path (-1: none).
  int64_t stuck_op = -1;
  State stuck_state{};
  int64_t last_op = -1;
  // Statistics.
  uint64_t steps = 0;
  size_t ops_searched = 0;  // after dropping
  size_t dropped_optional = 0;
  size_t slots = 0;    // width of the open-op bitmask
  size_t classes = 0;  // classes of interchangeable optional ops (one count each in the key)
  size_t cache_entries = 0;
  size_t cache_bytes = 0;
  size_t max_depth = 0;
};

// Decides whether ops (one partition) are linearizable under model. REQUIRES: each op's `sequential` flag is
// true only when its process satisfies the condition stated there (set_sequential_flags computes it).
// Never allocates more than the inputs' size times a constant plus the cache (bounded by limits).
template <class Model>
SearchResult<typename Model::State> search(const std::vector<LinOp>& input, const Model& model,
                                           const SearchLimits& limits) {
  using State = typename Model::State;
  static_assert(std::is_trivially_copyable<State>::value, "model state must be trivially copyable");
  static_assert(std::has_unique_object_representations<State>::value, "model state must have no padding");

  SearchResult<State> res;

  // --- Preparation: drop, sort by call, number the returns, colour open intervals into slots. ---
  // The arrays below are a few bytes per op each, tens of MB for a million ops: advised to huge pages
  // (core/huge_pages.h) before they are first written.
  std::vector<int32_t> orig;  // internal id -> input index, in call order
  orig.reserve(input.size());
  advise_huge_pages(orig);
  std::vector<uint8_t> exempt_in(input.size(), 0);
  for (size_t j = 0; j < input.size(); ++j) {
    const LinOp& op = input[j];
    if (op.optional() && op.sequential) {
      const OptionalRole role = model.optional_role(op);
      if (role == OptionalRole::kDrop) {
        ++res.dropped_optional;
        continue;
      }
      if (role == OptionalRole::kResolvedByState) exempt_in[j] = 1;
    }
    orig.push_back(static_cast<int32_t>(j));
  }
  auto by_call = [&](int32_t a, int32_t b) { return input[a].call < input[b].call; };
  if (!std::is_sorted(orig.begin(), orig.end(), by_call)) std::stable_sort(orig.begin(), orig.end(), by_call);
  const int32_t n = static_cast<int32_t>(orig.size());
  res.ops_searched = static_cast<size_t>(n);

  // The ops in call order: the input itself when nothing was dropped and it is in call order already (a copy of
  // a million ops is 32 MB), a copy otherwise.
  bool identity = static_cast<size_t>(n) == input.size();
  for (int32_t i = 0; identity && i < n; ++i) identity = orig[i] == i;
  std::vector<LinOp> ops_copy;
  if (!identity) {
    ops_copy.reserve(static_cast<size_t>(n));
    advise_huge_pages(ops_copy);
    ops_copy.resize(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) ops_copy[i] = input[orig[i]];
  }
  const std::vector<LinOp>& ops = identity ? input : ops_copy;
  std::vector<uint8_t> exempt(n, 0);
  for (int32_t i = 0; i < n; ++i) exempt[i] = exempt_in[orig[i]];

  std::vector<int32_t> returns;  // ordinal -> internal id, by return position
  {
    // Positions are distinct history indices: when they are dense enough, one bucket pass orders them.
    int64_t lo = kNoReturn, hi = -1;
    size_t required = 0;
    for (int32_t i = 0; i < n; ++i) {
      if (ops[i].optional()) continue;
      ++required;
      lo = std::min(lo, ops[i].ret);
      hi = std::max(hi, ops[i].ret);
    }
    returns.reserve(required);
    advise_huge_pages(returns);
    if (required > 0 && static_cast<uint64_t>(hi - lo) < 4 * static_cast<uint64_t>(required) + 1024) {
      std::vector<int32_t> bucket;
      assign_huge(&bucket, static_cast<size_t>(hi - lo + 1), int32_t{-1});
      for (int32_t i = 0; i < n; ++i)
        if (!ops[i].optional()) bucket[static_cast<size_t>(ops[i].ret - lo)] = i;
      for (int32_t b : bucket)
        if (b >= 0) returns.push_back(b);
    } else {
      std::vector<std::pair<int64_t, int32_t>> by_ret;
      by_ret.reserve(required);
      advise_huge_pages(by_ret);
      for (int32_t i = 0; i < n; ++i)
        if (!ops[i].optional()) by_ret.emplace_back(ops[i].ret, i);
      std::sort(by_ret.begin(), by_ret.end());
      for (const auto& e : by_ret) returns.push_back(e.second);
    }
  }
  const int32_t num_returns = static_cast<int32_t>(returns.size());
  std::vector<int32_t> ret_ord;
  assign_huge(&ret_ord, static_cast<size_t>(n), int32_t{-1});
  for (int32_t r = 0; r < num_returns; ++r) ret_ord[returns[r]] = r;

  // Classes of optional, non-exempt ops: (process, kind, arg) -> members in call order.
  std::vector<int32_t> op_class;
  assign_huge(&op_class, static_cast<size_t>(n), int32_t{-1});
  std::vector<std::vector<int32_t>> members;
  {
    std::map<std::tuple<Process, int16_t, int64_t>, int32_t> ids;
    for (int32_t i = 0; i < n; ++i) {
      if (!ops[i].optional() || exempt[i]) continue;
      auto it =
          ids.emplace(std::make_tuple(ops[i].process, ops[i].kind, ops[i].arg), static_cast<int32_t>(members.size()))
              .first;
      if (it->second == static_cast<int32_t>(members.size())) members.emplace_back();
      op_class[i] = it->second;
      members[static_cast<size_t>(it->second)].push_back(i);  // ops are in call order
    }
  }
  const int32_t num_classes = static_cast<int32_t>(members.size());
  res.classes = static_cast<size_t>(num_classes);
  std::vector<uint32_t> used(static_cast<size_t>(num_classes), 0);  // per class: members linearized (a prefix)

  // Slots: greedy interval colouring over [call, ret) of the required ops.
  std::vector<int32_t> slot;
  assign_huge(&slot, static_cast<size_t>(n), int32_t{-1});
  {
    std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>> free_slots;
    int32_t next_slot = 0;
    int32_t r = 0;  // returns are visited in order, merged with calls (already in call order)
    for (int32_t i = 0; i < n; ++i) {
      while (r < num_returns && ops[returns[r]].ret < ops[i].call) {
        free_slots.push(slot[returns[r]]);
        ++r;
      }
      if (exempt[i] || op_class[i] >= 0) continue;
      if (free_slots.empty()) {
        slot[i] = next_slot++;
      } else {
        slot[i] = free_slots.top();
        free_slots.pop();
      }
    }
    res.slots = static_cast<size_t>(next_slot);
  }
  const size_t mask_words = std::max<size_t>(1, (res.slots + 63) / 64);
  const size_t count_words = (static_cast<size_t>(num_classes) + 1) / 2;
  constexpr size_t kStateWords = (sizeof(State) + 7) / 8;
  const size_t key_words = 1 + mask_words + count_words + kStateWords;

  // The list of call entries: ids 0..n-1, head sentinel n, circular. Class members are left out of it.
  const int32_t head = n;
  std::vector<int32_t> nxt, prv;
  assign_huge(&nxt, static_cast<size_t>(n) + 1, int32_t{0});
  assign_huge(&prv, static_cast<size_t>(n) + 1, int32_t{0});
  {
    int32_t last = head;
    for (int32_t i = 0; i < n; ++i) {
      if (op_class[i] >= 0) continue;
      nxt[last] = i;
      prv[i] = last;
      last = i;
    }
    nxt[last] = head;
    prv[head] = last;
  }
  auto lift = [&](int32_t i) {
    nxt[prv[i]] = nxt[i];
    prv[nxt[i]] = prv[i];
  };
  auto unlift = [&](int32_t i) {
    nxt[prv[i]] = i;
    prv[nxt[i]] = i;
  };

  std::vector<uint8_t> linearized(n, 0);

  struct Record {
    int32_t op;
    int32_t prev_k;
    uint8_t skip;       // an exempt op unlinked as dead (no model step, same cache key)
    uint8_t had_child;  // the node this record created has lifted at least one child
    int32_t cls;        // the op's class when it is a class member, else -1
    State prev_state;
  };
  std::vector<Record> stack;
  std::vector<uint64_t> mask_stack;  // mask_words per record: the mask before the record's lift
  stack.reserve(static_cast<size_t>(n) + 1);
  mask_stack.reserve((static_cast<size_t>(n) + 1) * mask_words);
  advise_huge_pages(stack);
  advise_huge_pages(mask_stack);

  StateCache cache(key_words, limits.max_cache_bytes);
  std::vector<uint64_t> key(key_words, 0);
  std::vector<uint64_t> mask(mask_words, 0), child_mask(mask_words, 0);

  // Small copies are plain loops: the mask is usually one word, and a library call per step costs more.
  auto make_key = [&](int32_t k, const uint64_t* m, const State& s) {
    uint64_t* out = key.data();
    out[0] = static_cast<uint64_t>(static_cast<uint32_t>(k));
    for (size_t w = 0; w < mask_words; ++w) out[1 + w] = m[w];
    for (size_t w = 0; w < count_words; ++w) {
      const size_t c = 2 * w;
      out[1 + mask_words + w] =
          used[c] | (c + 1 < used.size() ? static_cast<uint64_t>(used[c + 1]) << 32 : uint64_t{0});
    }
    uint64_t words[kStateWords] = {};
    std::memcpy(words, &s, sizeof(State));
    for (size_t w = 0; w < kStateWords; ++w) out[1 + mask_words + count_words + w] = words[w];
  };
  auto push_mask = [&]() {
    for (size_t w = 0; w < mask_words; ++w) mask_stack.push_back(mask[w]);
  };
  auto pop_mask_into = [&](uint64_t* dst) {
    const size_t base = mask_stack.size() - mask_words;
    if (dst != nullptr)
      for (size_t w = 0; w < mask_words; ++w) dst[w] = mask_stack[base + w];
    mask_stack.resize(base);
  };

  State cur = model.init();
  int32_t k = 0;
  int32_t entry = nxt[head];
  int32_t next_cls = -1;  // >= 0: the list is done, the scan is at this class
  // Deepest point: maximise (k, depth).
  int32_t best_k = -1;
  size_t best_depth = 0;

  auto finish = [&](Outcome o) {
    res.outcome = o;
    res.cache_entries = cache.size();
    res.cache_bytes = cache.bytes();
    return res;
  };

  for (;;) {
    if ((++res.steps & 4095) == 0 && std::chrono::steady_clock::now() > limits.deadline) {
      return finish(Outcome::kTimeout);
    }
    if (k == num_returns) return finish(Outcome::kLinearizable);
    const int64_t rpos = ops[returns[k]].ret;

    if (next_cls < 0 && (entry == head || ops[entry].call > rpos)) next_cls = 0;
    if (next_cls >= 0) {
      // After the list: the next unused member of each class, when it is visible and accepted.
      bool lifted = false;
      while (next_cls < num_classes && !lifted) {
        const int32_t c = next_cls++;
        const std::vector<int32_t>& mem = members[static_cast<size_t>(c)];
        if (used[static_cast<size_t>(c)] == mem.size()) continue;
        const int32_t i = mem[used[static_cast<size_t>(c)]];
        if (ops[i].call > rpos) continue;
        State next{};
        if (!model.step(cur, ops[i], &next)) continue;
        if (ops[i].sequential && model.exclusive_owner(next) == ops[i].process) continue;
        ++used[static_cast<size_t>(c)];
        make_key(k, mask.data(), next);
        if (cache.size() > 0 && cache.contains(key.data(), StateCache::hash(key.data(), key_words))) {
          --used[static_cast<size_t>(c)];
          continue;
        }
        if (!stack.empty()) stack.back().had_child = 1;
        stack.push_back(Record{i, k, 0, 0, c, cur});
        push_mask();
        linearized[i] = 1;
        cur = next;
        if (stack.size() > res.max_depth) res.max_depth = stack.size();
        entry = nxt[head];
        next_cls = -1;
        lifted = true;
      }
      if (lifted) continue;

      // Every op allowed next has been tried: backtrack.
      if (k > best_k || (k == best_k && stack.size() > best_depth)) {
        best_k = k;
        best_depth = stack.size();
        res.stuck_op = orig[returns[k]];
        res.stuck_state = cur;
        res.last_op = stack.empty() ? -1 : orig[stack.back().op];
      }
      bool had = false;
      while (!stack.empty() && stack.back().skip) {
        had = had || stack.back().had_child;
        const int32_t op = stack.back().op;
        linearized[op] = 0;
        unlift(op);
        stack.pop_back();
        pop_mask_into(nullptr);
      }
      if (stack.empty()) return finish(Outcome::kNotLinearizable);
      const Record rec = stack.back();
      had = had || rec.had_child;
      if (had) {
        make_key(k, mask.data(), cur);
        if (cache.insert(key.data(), StateCache::hash(key.data(), key_words)) == StateCache::Insert::kFull) {
          return finish(Outcome::kMemoryCap);
        }
      }
      cur = rec.prev_state;
      k = rec.prev_k;
      pop_mask_into(mask.data());
      linearized[rec.op] = 0;
      stack.pop_back();
      if (!stack.empty()) stack.back().had_child = 1;
      if (rec.cls >= 0) {
        --used[static_cast<size_t>(rec.cls)];
        next_cls = rec.cls + 1;
      } else {
        unlift(rec.op);
        entry = nxt[rec.op];
        next_cls = -1;
      }
      continue;
    }

    const int32_t i = entry;
    State next{};
    if (!model.step(cur, ops[i], &next)) {
      if (exempt[i]) {
        // Dead for the rest of this path (kResolvedByState): unlink it so later scans do not see it again.
        stack.push_back(Record{i, k, 1, 0, -1, cur});
        push_mask();
        linearized[i] = 1;
        entry = nxt[i];
        lift(i);
        continue;
      }
      entry = nxt[i];
      continue;
    }
    if (ops[i].sequential && ret_ord[i] != k && model.exclusive_owner(next) == ops[i].process) {
      entry = nxt[i];
      continue;
    }

    // The child's key.
    int32_t nk = k;
    for (size_t w = 0; w < mask_words; ++w) child_mask[w] = mask[w];
    if (!exempt[i]) {
      if (ret_ord[i] == k) {
        nk = k + 1;
        while (nk < num_returns && linearized[returns[nk]]) {
          const int32_t s = slot[returns[nk]];
          child_mask[static_cast<size_t>(s) >> 6] &= ~(uint64_t{1} << (s & 63));
          ++nk;
        }
      } else {
        const int32_t s = slot[i];
        child_mask[static_cast<size_t>(s) >> 6] |= uint64_t{1} << (s & 63);
      }
    }
    make_key(nk, child_mask.data(), next);
    if (cache.size() > 0 && cache.contains(key.data(), StateCache::hash(key.data(), key_words))) {
      entry = nxt[i];
      continue;
    }

    if (!stack.empty()) stack.back().had_child = 1;
    stack.push_back(Record{i, k, 0, 0, -1, cur});
    push_mask();
    linearized[i] = 1;
    lift(i);
    cur = next;
    k = nk;
    mask.swap(child_mask);
    if (stack.size() > res.max_depth) res.max_depth = stack.size();
    entry = nxt[head];
  }
}

}  // namespace wgl
}  // namespace lockcheck
