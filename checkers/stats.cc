// The `stats` checker: figures about the run, always valid.
//  - counts of ok / fail / info / crashed (invoked, never completed) per f and per client process (the
//    kMaxProcesses processes with the most ops; the rest summed in "by_process_omitted", so that a long run that
//    retires a process per info op does not write a table of hundreds of thousands); nemesis ops per f;
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
constexpr size_t kMaxProcesses = 100;

// The nearest-rank percentile of v in ms (v is reordered: nth_element instead of a full sort). Asked for
// increasing p, each call searches only above the previous one's rank *from (nth_element left everything below
// it no greater, everything above no smaller), and leaves its own rank there.
double percentile(std::vector<int64_t>* v, double p, size_t* from) {
  if (v->empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v->size())));
  const size_t k = std::max(*from, std::min(v->size() - 1, rank == 0 ? 0 : rank - 1));
  std::nth_element(v->begin() + static_cast<std::ptrdiff_t>(*from), v->begin() + static_cast<std::ptrdiff_t>(k),
                   v->end());
  *from = k;
  return static_cast<double>((*v)[k]) / 1e6;
}

struct Counts {
  int64_t ok = 0, fail = 0, info = 0, crashed = 0;
  void add(OpType t) {
    if (t == OpType::kOk)
      ++ok;
    else if (t == OpType::kFail)
      ++fail;
    else if (t == OpType::kInfo)
      ++info;
  }
  int64_t total() const { return ok + fail + info + crashed; }
  void add(const Counts& c) {
    ok += c.ok;
    fail += c.fail;
    info += c.info;
    crashed += c.crashed;
  }
  nlohmann::json json() const { return {{"ok", ok}, {"fail", fail}, {"info", info}, {"crashed", crashed}}; }
};

class StatsChecker : public Checker {
 public:
  std::string name() const override { return "stats"; }

  CheckResult check(const History& h, const CheckOptions& opts) const override {
    CheckResult r;
    std::vector<int64_t> scratch;
    const std::vector<int64_t>& pairs = pairs_of(h, opts, &scratch);
    // Per f: a few distinct names, found by a linear search over Atoms (pointer compares).
    struct PerF {
      Atom f;
      Counts counts;
      std::vector<int64_t> latency;
    };
    std::vector<PerF> by_f;
    auto per_f = [&](const Atom& f) -> PerF& {
      for (PerF& x : by_f) {
        if (x.f == f) return x;
      }
      by_f.push_back(PerF{f, {}, {}});
      return by_f.back();
    };
    // Per process: a flat table for the usual small ids, a map beyond.
    constexpr Process kDense = 1 << 22;
    std::vector<Counts> dense;
    std::vector<bool> dense_seen;
    std::map<Process, Counts> sparse;
    auto per_process = [&](Process p) -> Counts& {
      if (p < kDense) {
        if (static_cast<size_t>(p) >= dense.size()) {
          dense.resize(static_cast<size_t>(p) + 1);
          dense_seen.resize(static_cast<size_t>(p) + 1);
        }
        dense_seen[static_cast<size_t>(p)] = true;
        return dense[static_cast<size_t>(p)];
      }
      return sparse[p];
    };
    std::map<std::string, int64_t> nemesis;
    std::vector<int64_t> ok_per_s, fail_per_s, info_per_s;
    Counts total;
    int64_t loss_notices = 0;

    for (size_t i = 0; i < h.size(); ++i) {
      prefetch_pair(h, pairs, i);
      const Op& op = h[i];
      if (!op.is_client()) {
        if (op.is_invoke() || pairs[i] < 0) ++nemesis[op.f];
        continue;
      }
      if (op.is_notice()) {  // a loss notice is not an op's outcome: the loss-notice checker reads it
        ++loss_notices;
        continue;
      }
      if (op.is_invoke()) {
        if (pairs[i] < 0) {
          ++per_f(op.f).counts.crashed;
          ++per_process(op.process).crashed;
          ++total.crashed;
        }
        continue;
      }
      PerF& pf = per_f(op.f);
      pf.counts.add(op.type);
      per_process(op.process).add(op.type);
      total.add(op.type);
      if (pairs[i] >= 0) pf.latency.push_back(op.time_ns - h[static_cast<size_t>(pairs[i])].time_ns);
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
    for (const PerF& x : by_f) f_json[x.f.str()] = x.counts.json();
    // The processes with the most ops (ties: the lower id), at most kMaxProcesses; the rest summed.
    std::vector<std::pair<Process, Counts>> procs;
    for (size_t p = 0; p < dense.size(); ++p) {
      if (dense_seen[p]) procs.emplace_back(static_cast<Process>(p), dense[p]);
    }
    for (const auto& [p, c] : sparse) procs.emplace_back(p, c);
    const size_t process_count = procs.size();
    if (procs.size() > kMaxProcesses) {
      std::nth_element(procs.begin(), procs.begin() + kMaxProcesses, procs.end(), [](const auto& a, const auto& b) {
        return a.second.total() != b.second.total() ? a.second.total() > b.second.total() : a.first < b.first;
      });
      Counts rest;
      for (size_t k = kMaxProcesses; k < procs.size(); ++k) rest.add(procs[k].second);
      nlohmann::json omitted = rest.json();
      omitted["processes"] = procs.size() - kMaxProcesses;
      r.stats["by_process_omitted"] = omitted;
      procs.resize(kMaxProcesses);
    }
    for (const auto& [p, c] : procs) p_json[std::to_string(p)] = c.json();
    for (PerF& x : by_f) {
      if (x.latency.empty()) continue;
      std::vector<int64_t>& v = x.latency;
      size_t from = 0;
      const double p50 = percentile(&v, 50, &from), p90 = percentile(&v, 90, &from),
                   p99 = percentile(&v, 99, &from), max = percentile(&v, 100, &from);
      lat_json[x.f.str()] = {{"count", v.size()}, {"p50", p50}, {"p90", p90}, {"p99", p99}, {"max", max}};
    }
    const double span_s = h.empty() ? 0.0 : static_cast<double>(h.back().time_ns - h.front().time_ns) / 1e9;
    const int64_t completed = total.ok + total.fail + total.info;
    r.stats["ops"] = total.json();
    r.stats["by_f"] = f_json;
    r.stats["processes"] = process_count;
    r.stats["by_process"] = p_json;
    r.stats["nemesis"] = nemesis;
    if (loss_notices > 0) r.stats["loss_notices"] = loss_notices;
    r.stats["latency_ms"] = lat_json;
    r.stats["throughput_per_s"] = {{"bucket_s", 1}, {"ok", ok_per_s}, {"fail", fail_per_s}, {"info", info_per_s}};
    r.stats["span_s"] = span_s;
    int64_t nemesis_ops = 0;
    for (const auto& kv : nemesis) nemesis_ops += kv.second;
    char buf[256];
    std::snprintf(
        buf, sizeof buf,
        "%lld client ops completed (ok %lld, fail %lld, info %lld, crashed %lld), %lld nemesis ops, over %.1f s",
        static_cast<long long>(completed), static_cast<long long>(total.ok), static_cast<long long>(total.fail),
        static_cast<long long>(total.info), static_cast<long long>(total.crashed), static_cast<long long>(nemesis_ops),
        span_s);
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
