// The `stats` checker: figures about the run, always valid.
//  - counts of ok / fail / info / crashed (invoked, never completed) per f and per client process; nemesis ops
//    per f;
//  - latency (invoke to completion, ms) per f: count, p50, p90, p99 (nearest rank), max;
//  - throughput: client ops completed per 1 s bucket of history time, per completion type (arrays indexed by
//    second; at most kMaxBuckets buckets, the last one collecting the rest).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>

#include "checkers/checker.h"

namespace lockcheck {

namespace {

constexpr int64_t kBucketNs = 1000000000;
constexpr int64_t kMaxBuckets = 100000;

double percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return static_cast<double>(sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)]) / 1e6;
}

struct Counts {
  int64_t ok = 0, fail = 0, info = 0, crashed = 0;
  void add(OpType t) {
    if (t == OpType::kOk) ++ok;
    else if (t == OpType::kFail) ++fail;
    else if (t == OpType::kInfo) ++info;
  }
  nlohmann::json json() const { return {{"ok", ok}, {"fail", fail}, {"info", info}, {"crashed", crashed}}; }
};

class StatsChecker : public Checker {
 public:
  std::string name() const override { return "stats"; }

  CheckResult check(const History& h, const CheckOptions&) const override {
    CheckResult r;
    const std::vector<int64_t> pairs = pair_index(h);
    std::map<std::string, Counts> by_f;
    std::map<Process, Counts> by_process;
    std::map<std::string, int64_t> nemesis;
    std::map<std::string, std::vector<int64_t>> latency;
    std::vector<int64_t> ok_per_s, fail_per_s, info_per_s;
    Counts total;

    for (size_t i = 0; i < h.size(); ++i) {
      const Op& op = h[i];
      if (!op.is_client()) {
        if (op.is_invoke() || pairs[i] < 0) ++nemesis[op.f];
        continue;
      }
      if (op.is_invoke()) {
        if (pairs[i] < 0) {
          ++by_f[op.f].crashed;
          ++by_process[op.process].crashed;
          ++total.crashed;
        }
        continue;
      }
      by_f[op.f].add(op.type);
      by_process[op.process].add(op.type);
      total.add(op.type);
      if (pairs[i] >= 0) latency[op.f].push_back(op.time_ns - h[static_cast<size_t>(pairs[i])].time_ns);
      const int64_t bucket = std::min(kMaxBuckets - 1, std::max<int64_t>(0, op.time_ns / kBucketNs));
      auto& series = op.is_ok() ? ok_per_s : op.is_fail() ? fail_per_s : info_per_s;
      if (static_cast<int64_t>(series.size()) <= bucket) series.resize(static_cast<size_t>(bucket) + 1, 0);
      ++series[static_cast<size_t>(bucket)];
    }
    const size_t buckets = std::max({ok_per_s.size(), fail_per_s.size(), info_per_s.size()});
    ok_per_s.resize(buckets, 0);
    fail_per_s.resize(buckets, 0);
    info_per_s.resize(buckets, 0);

    nlohmann::json f_json = nlohmann::json::object(), p_json = nlohmann::json::object(),
                   lat_json = nlohmann::json::object();
    for (const auto& [f, c] : by_f) f_json[f] = c.json();
    for (const auto& [p, c] : by_process) p_json[std::to_string(p)] = c.json();
    for (auto& [f, v] : latency) {
      std::sort(v.begin(), v.end());
      lat_json[f] = {{"count", v.size()},
                     {"p50", percentile(v, 50)},
                     {"p90", percentile(v, 90)},
                     {"p99", percentile(v, 99)},
                     {"max", percentile(v, 100)}};
    }
    const double span_s = h.empty() ? 0.0 : static_cast<double>(h.back().time_ns - h.front().time_ns) / 1e9;
    const int64_t completed = total.ok + total.fail + total.info;
    r.stats = {{"ops", total.json()},
               {"by_f", f_json},
               {"by_process", p_json},
               {"nemesis", nemesis},
               {"latency_ms", lat_json},
               {"throughput_per_s", {{"bucket_s", 1}, {"ok", ok_per_s}, {"fail", fail_per_s}, {"info", info_per_s}}},
               {"span_s", span_s}};
    int64_t nemesis_ops = 0;
    for (const auto& kv : nemesis) nemesis_ops += kv.second;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%lld client ops completed (ok %lld, fail %lld, info %lld, crashed %lld), %lld nemesis ops, over %.1f s",
                  static_cast<long long>(completed), static_cast<long long>(total.ok),
                  static_cast<long long>(total.fail), static_cast<long long>(total.info),
                  static_cast<long long>(total.crashed), static_cast<long long>(nemesis_ops), span_s);
    r.summary = buf;
    if (completed == 0) {
      r.valid = Validity::kUnknown;
      r.summary = "nothing checked: no client op completed";
    }
    return r;
  }
};

}  // namespace

std::unique_ptr<Checker> make_stats_checker() { return std::make_unique<StatsChecker>(); }

// This checker's line in the registry (checkers/registry.cc): its name, what `lockcheck list` says of it, its factory.
CheckerInfo stats_checker() {
  return {"stats", "op counts, latency percentiles and throughput per second (valid once any op completed)",
   make_stats_checker};
}

}  // namespace lockcheck
