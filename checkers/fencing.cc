// The `fencing` checker.
//  - Tokens handed out by ok acquires must increase per key in real-time order: if acquire A completed before
//    acquire B was invoked, token(A) < token(B). A lower token is a "token-regression"; the same token on two
//    different acquires of one key (in any order) is a "duplicate-token".
//  - A resource that checks tokens must not accept a stale one: every ok write (f "add" or "write") that carries a
//    token must carry one no lower than that of every ok write on the same resource key that completed before it
//    was invoked; otherwise "stale-write-accepted".
// The token of an op is the one on its completion, else the one on its invoke.
#include <algorithm>
#include <map>
#include <memory>
#include <unordered_map>

#include "checkers/checker.h"
#include "checkers/format.h"

namespace lockcheck {

namespace {

constexpr size_t kMaxAnomaliesPerKind = 1000;

std::optional<int64_t> token_of(const Op& invoke, const Op& done) { return done.token ? done.token : invoke.token; }

struct Best {
  int64_t token = 0;
  int64_t invoke = -1, done = -1;  // history indices of the op that set it
  Process process = 0;
};

class FencingChecker : public Checker {
 public:
  std::string name() const override { return "fencing"; }

  CheckResult check(const History& h, const CheckOptions&) const override {
    CheckResult r;
    const std::vector<int64_t> pairs = pair_index(h);
    std::unordered_map<std::string, Best> acquired, written;  // key -> highest token among completed oks
    std::map<std::pair<std::string, int64_t>, std::vector<int64_t>> by_token;  // (key, token) -> acquire invokes
    int64_t acquires = 0, writes = 0, regressions = 0, duplicates = 0, stale = 0;
    size_t regression_listed = 0, stale_listed = 0;

    for (size_t i = 0; i < h.size(); ++i) {
      const Op& op = h[i];
      if (!op.is_client()) continue;
      const bool is_acquire = op.f == "acquire";
      const bool is_write = op.f == "add" || op.f == "write";
      if (!is_acquire && !is_write) continue;
      if (op.is_invoke()) {
        const int64_t c = pairs[i];
        if (c < 0 || !h[static_cast<size_t>(c)].is_ok()) continue;
        const std::optional<int64_t> token = token_of(op, h[static_cast<size_t>(c)]);
        if (!token) continue;
        auto& best_map = is_acquire ? acquired : written;
        auto it = best_map.find(op.key);
        if (is_acquire) {
          ++acquires;
          by_token[{op.key, *token}].push_back(static_cast<int64_t>(i));
        } else {
          ++writes;
        }
        if (it == best_map.end() || it->second.token <= *token) continue;
        const Best& b = it->second;
        const std::vector<int64_t> ops = {b.invoke, b.done, static_cast<int64_t>(i), c};
        if (is_acquire) {
          ++regressions;
          if (regression_listed++ >= kMaxAnomaliesPerKind) continue;
          r.anomalies.push_back(
              {{"kind", "token-regression"},
               {"description", process_name(op.process) + "'s acquire of " + op.key + " (op " +
                                   std::to_string(c) + ") got token " + std::to_string(*token) + ", but token " +
                                   std::to_string(b.token) + " had already been handed out by " +
                                   process_name(b.process) + "'s acquire (op " + std::to_string(b.done) +
                                   ") that completed before it was invoked"},
               {"ops", ops},
               {"key", op.key},
               {"processes", {b.process, op.process}},
               {"from_ns", h[static_cast<size_t>(b.done)].time_ns},
               {"at_ns", h[static_cast<size_t>(c)].time_ns},
               {"to_ns", h[static_cast<size_t>(c)].time_ns}});
        } else {
          ++stale;
          if (stale_listed++ >= kMaxAnomaliesPerKind) continue;
          r.anomalies.push_back(
              {{"kind", "stale-write-accepted"},
               {"description", process_name(op.process) + "'s " + op.f + " to " + op.key + " (op " +
                                   std::to_string(c) + ") was accepted with token " + std::to_string(*token) +
                                   " after a write with token " + std::to_string(b.token) + " (" +
                                   process_name(b.process) + ", op " + std::to_string(b.done) + ") had completed"},
               {"ops", ops},
               {"key", op.key},
               {"processes", {b.process, op.process}},
               {"from_ns", h[static_cast<size_t>(b.done)].time_ns},
               {"at_ns", h[static_cast<size_t>(c)].time_ns},
               {"to_ns", h[static_cast<size_t>(c)].time_ns}});
        }
        continue;
      }
      if (!op.is_ok()) continue;
      const int64_t inv = pairs[i];
      if (inv < 0) continue;
      const std::optional<int64_t> token = token_of(h[static_cast<size_t>(inv)], op);
      if (!token) continue;
      Best& b = (is_acquire ? acquired : written)[op.key];
      if (b.invoke < 0 || *token > b.token) b = Best{*token, inv, static_cast<int64_t>(i), op.process};
    }

    size_t dup_listed = 0;
    for (const auto& [kt, invokes] : by_token) {
      if (invokes.size() < 2) continue;
      ++duplicates;
      if (dup_listed++ >= kMaxAnomaliesPerKind) continue;
      std::vector<int64_t> ops;
      std::vector<int64_t> procs;
      std::vector<int64_t> oks;  // when each acquire returned the token
      for (int64_t inv : invokes) {
        ops.push_back(inv);
        ops.push_back(pairs[static_cast<size_t>(inv)]);
        procs.push_back(h[static_cast<size_t>(inv)].process);
        oks.push_back(h[static_cast<size_t>(pairs[static_cast<size_t>(inv)])].time_ns);
      }
      std::nth_element(oks.begin(), oks.begin() + 1, oks.end());  // the duplicate exists once the second returned
      std::sort(ops.begin(), ops.end());
      std::string who;
      for (size_t j = 0; j < invokes.size() && j < 5; ++j) {
        who += std::string(j ? ", " : "") + process_name(procs[j]) + " (op " +
               std::to_string(pairs[static_cast<size_t>(invokes[j])]) + ")";
      }
      r.anomalies.push_back({{"kind", "duplicate-token"},
                             {"description", "token " + std::to_string(kt.second) + " for " + kt.first +
                                                 " was handed out to " + std::to_string(invokes.size()) +
                                                 " acquires: " + who + (invokes.size() > 5 ? ", ..." : "")},
                             {"ops", ops},
                             {"key", kt.first},
                             {"processes", procs},
                             {"from_ns", h[static_cast<size_t>(invokes.front())].time_ns},
                             {"at_ns", oks[1]},
                             {"to_ns", h[static_cast<size_t>(pairs[static_cast<size_t>(invokes.back())])].time_ns}});
    }

    r.stats = {{"acquires_with_token", acquires},
               {"writes_with_token", writes},
               {"token_regressions", regressions},
               {"duplicate_tokens", duplicates},
               {"stale_writes_accepted", stale}};
    const int64_t bad = regressions + duplicates + stale;
    if (bad > 0) {
      r.valid = Validity::kInvalid;
      r.summary = std::to_string(regressions) + " token regression(s), " + std::to_string(duplicates) +
                  " duplicate token(s), " + std::to_string(stale) + " stale write(s) accepted";
    } else if (acquires == 0 && writes == 0) {
      r.valid = Validity::kUnknown;
      r.summary = "nothing checked: no fencing tokens in the history (does the lock hand them out? --fencing)";
    } else {
      r.summary = "tokens increase in real-time order (" + std::to_string(acquires) +
                  " acquires) and no stale write was accepted (" + std::to_string(writes) + " writes with tokens)";
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Checker> make_fencing_checker() { return std::make_unique<FencingChecker>(); }

// This checker's line in the registry (checkers/registry.cc): its name, what `lockcheck list` says of it, its factory.
CheckerInfo fencing_checker() {
  return {"fencing", "tokens increase in real-time order per key; no write with a stale token is accepted",
          make_fencing_checker};
}

}  // namespace lockcheck
