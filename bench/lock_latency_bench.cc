// Acquire (and release) latency of the lock clients on a healthy local cluster, one client, no contention:
// `single` (one node, sync hiredis), `redlock` (N nodes in parallel on one libevent loop) and
// `redlock-sequential` (N nodes one after another). Prints p50/p90/p99/max per algorithm and the ratio of each
// p50 to single's. Figures, not assertions: see bench/README-locks.md for measured numbers.
//
// The clients talk to the nodes directly unless --proxy puts the harness's fault proxy in between (as in a run).
// --persistence-sweep: the price of durability the Redlock article names (issue 30): three clusters side by side,
// persistence none, aof-everysec and aof-always, each with `single` and `redlock`, cycles interleaved over all
// six, plus the lock ops (acquire + release) per second of each.
//
// usage: lock_latency_bench [--cycles N] [--nodes N] [--warmup N] [--proxy] [--persistence-sweep]
//                           [--redis-server PATH]
#include <stdlib.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/filesystem.hpp>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cluster/server_cluster.h"
#include "harness/plan.h"
#include "locks/lock_client.h"

namespace lockcheck {
namespace {

struct Args {
  int cycles = 2000;
  int nodes = 5;
  int warmup = 200;
  bool proxy = false;
  bool persistence_sweep = false;
  std::string redis_server = "redis-server";
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
      return argv[++i];
    };
    if (flag == "--cycles") {
      a.cycles = std::stoi(value());
    } else if (flag == "--nodes") {
      a.nodes = std::stoi(value());
    } else if (flag == "--warmup") {
      a.warmup = std::stoi(value());
    } else if (flag == "--proxy") {
      a.proxy = true;
    } else if (flag == "--persistence-sweep") {
      a.persistence_sweep = true;
    } else if (flag == "--redis-server") {
      a.redis_server = value();
    } else {
      throw std::invalid_argument(
          "unknown flag " + flag +
          " (usage: lock_latency_bench [--cycles N] [--nodes N] [--warmup N] [--proxy] [--persistence-sweep] "
          "[--redis-server PATH])");
    }
  }
  if (a.cycles < 1 || a.nodes < 1 || a.warmup < 0) throw std::invalid_argument("--cycles and --nodes must be >= 1");
  return a;
}

struct Stats {
  double p50, p90, p99, max, mean;
};

Stats stats_of(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  auto at = [&](double q) {
    return us[std::min(us.size() - 1, static_cast<size_t>(q * static_cast<double>(us.size())))];
  };
  double sum = 0;
  for (double v : us) sum += v;
  return {at(0.50), at(0.90), at(0.99), us.back(), sum / static_cast<double>(us.size())};
}

struct Result {
  std::string name;
  Stats acquire, release;
  double cpu_us_per_cycle = 0;  // this thread's user+system CPU per acquire+release cycle
  double ops_per_s = 0;         // acquires + releases per second of this probe's own wall time
  int failures = 0;
};

// One probe: an algorithm against a cluster (label: how the table names it).
struct ProbeSpec {
  std::string label;
  std::string algorithm;
  LockOptions options;
};

double thread_cpu_us() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// Runs the algorithms' cycles interleaved (one cycle of each in turn), so that the load of a shared machine
// falls on all of them alike and the ratios stay meaningful.
std::vector<Result> measure(const std::vector<ProbeSpec>& specs, const Args& args) {
  struct Probe {
    std::unique_ptr<LockClient> client;
    std::vector<double> acq, rel;
    double cpu_us = 0;
    int failures = 0;
  };
  std::vector<Probe> probes;
  for (const auto& spec : specs) {
    Probe p;
    p.client = find_lock_algorithm(spec.algorithm)->make(spec.options);
    p.acq.reserve(static_cast<size_t>(args.cycles));
    p.rel.reserve(static_cast<size_t>(args.cycles));
    probes.push_back(std::move(p));
  }
  const std::chrono::milliseconds ttl(10000);
  for (int i = 0; i < args.warmup + args.cycles; ++i) {
    for (auto& p : probes) {
      const double cpu0 = thread_cpu_us();
      const auto t0 = std::chrono::steady_clock::now();
      LockResult a = p.client->acquire("bench-lock", ttl);
      const auto t1 = std::chrono::steady_clock::now();
      LockResult r = p.client->release("bench-lock");
      const auto t2 = std::chrono::steady_clock::now();
      const double cpu1 = thread_cpu_us();
      if (a.outcome != OpType::kOk || r.outcome != OpType::kOk) {
        ++p.failures;
        continue;
      }
      if (i < args.warmup) continue;
      p.acq.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      p.rel.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
      p.cpu_us += cpu1 - cpu0;
    }
  }
  std::vector<Result> out;
  for (size_t k = 0; k < probes.size(); ++k) {
    Probe& p = probes[k];
    if (p.acq.empty()) throw std::runtime_error(specs[k].label + ": no successful cycle");
    Result res;
    res.name = specs[k].label;
    double wall_us = 0;
    for (size_t c = 0; c < p.acq.size(); ++c) wall_us += p.acq[c] + p.rel[c];
    res.ops_per_s = 2.0 * static_cast<double>(p.acq.size()) / (wall_us / 1e6);
    res.acquire = stats_of(p.acq);
    res.release = stats_of(p.rel);
    res.cpu_us_per_cycle = p.cpu_us / static_cast<double>(p.acq.size());
    res.failures = p.failures;
    out.push_back(res);
  }
  return out;
}

int run(int argc, char** argv) {
  Args args = parse(argc, argv);
  std::string dir = "/tmp/lockcheck-bench-XXXXXX";
  if (::mkdtemp(&dir[0]) == nullptr) throw std::runtime_error("mkdtemp failed");
  std::vector<Result> results;
  {
    const std::vector<std::string> modes = args.persistence_sweep
                                               ? std::vector<std::string>{"none", "aof-everysec", "aof-always"}
                                               : std::vector<std::string>{"none"};
    std::vector<std::unique_ptr<ServerCluster>> clusters;
    std::vector<ProbeSpec> specs;
    for (const std::string& p : modes) {
      RunConfig rc;
      rc.nodes = args.nodes;
      rc.nodes_given = true;
      rc.concurrency = 1;
      rc.server_opts = {{"persistence", p}, {"redis_server", args.redis_server}};
      ClusterSetup setup;
      setup.run_dir = dir + "/run-" + p;
      setup.concurrency = 1;
      setup.network_faults = args.proxy;
      setup.clock_shim = false;
      clusters.push_back(std::make_unique<LoopbackCluster>(plan_server_run(resolve_server_plan(rc)), setup));
      ServerCluster& cluster = *clusters.back();
      cluster.start();
      LockOptions lo;
      for (size_t n = 0; n < cluster.nodes().size(); ++n) lo.nodes.push_back(cluster.endpoint_for("c0", n));
      lo.op_timeout = std::chrono::milliseconds(500);
      lo.connect_timeout = std::chrono::milliseconds(500);
      lo.extra["retry_count"] = 0;
      std::vector<std::string> algorithms = {"single", "redlock"};
      if (!args.persistence_sweep) algorithms.push_back("redlock-sequential");
      for (const auto& a : algorithms) {
        specs.push_back({args.persistence_sweep ? a + " " + p : a, a, lo});
      }
    }
    results = measure(specs, args);
    for (auto& c : clusters) c->stop();
  }
  boost::system::error_code ec;
  boost::filesystem::remove_all(dir, ec);

  std::printf(
      "lock latency, %d acquire+release cycles each (interleaved) after %d warm-up, one client per "
      "algorithm, %d nodes, loopback%s (us)\n",
      args.cycles, args.warmup, args.nodes, args.proxy ? " through the fault proxy" : "");
  std::printf("%-20s %9s %9s %9s %9s %9s %8s | %9s %9s | %9s %9s\n", "algorithm", "acq p50", "acq p90", "acq p99",
              "acq max", "acq mean", "p50/single", "rel p50", "rel p99", "cpu/cycle", "ops/s");
  const double base = results.front().acquire.p50;
  for (const auto& r : results) {
    const std::string failed = r.failures ? "  (" + std::to_string(r.failures) + " failed cycles)" : "";
    std::printf("%-20s %9.1f %9.1f %9.1f %9.1f %9.1f %8.2fx | %9.1f %9.1f | %9.1f %9.0f%s\n", r.name.c_str(),
                r.acquire.p50, r.acquire.p90, r.acquire.p99, r.acquire.max, r.acquire.mean, r.acquire.p50 / base,
                r.release.p50, r.release.p99, r.cpu_us_per_cycle, r.ops_per_s, failed.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace lockcheck

int main(int argc, char** argv) {
  try {
    return lockcheck::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "lock_latency_bench: " << e.what() << "\n";
    return 2;
  }
}
