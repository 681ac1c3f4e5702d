// Start-up and teardown time of a cluster of any server kind on any backend, made as a run makes it
// (resolve_server_plan, make_cluster): the local backend, scripts/ssh-testbed's hosts, or docker containers.
//   BUILD/bench/cluster_start_stop_bench [--cluster local|docker|ssh] [--hosts FILE] [--server KIND] [--nodes 5]
//                                        [--repeat 3] [--server-opt KEY=VALUE]...
// Prints one line per round: start s, stop s. Never asserts on speed. (bench/start_stop.sh times `lockcheck run`
// itself, from its log, for two binaries side by side.)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <boost/filesystem.hpp>

#include "harness/cluster_factory.h"
#include "harness/plan.h"

int main(int argc, char** argv) {
  lockcheck::RunConfig cfg;
  cfg.nodes_given = true;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "cluster_start_stop_bench: %s needs a value\n", a.c_str());
      return 2;
    }
    const std::string v = argv[++i];
    if (a == "--cluster") {
      cfg.cluster = v;
    } else if (a == "--hosts") {
      cfg.hosts = v;
    } else if (a == "--server") {
      cfg.server = v;
    } else if (a == "--nodes") {
      cfg.nodes = std::atoi(v.c_str());
    } else if (a == "--repeat") {
      repeat = std::atoi(v.c_str());
    } else if (a == "--server-opt") {
      lockcheck::find_config_field("server_opts")->parse_flag(cfg, v, a);
    } else {
      std::fprintf(stderr,
                   "usage: cluster_start_stop_bench [--cluster local|docker|ssh] [--hosts FILE] [--server KIND] "
                   "[--nodes N] [--repeat R] [--server-opt KEY=VALUE]...\n");
      return 2;
    }
  }
  try {
    const lockcheck::Plan plan = lockcheck::resolve_server_plan(cfg);
    namespace fs = boost::filesystem;
    const fs::path dir = fs::temp_directory_path() / fs::unique_path("lockcheck-start-stop-%%%%%%");
    std::printf("round  start_s  stop_s  (%s on %s, %d nodes)\n", plan.config.server.c_str(),
                plan.config.cluster.c_str(), plan.config.nodes);
    for (int r = 1; r <= repeat; ++r) {
      auto c = lockcheck::make_cluster(plan, (dir / std::to_string(r)).string());
      const auto t0 = std::chrono::steady_clock::now();
      c->start();
      const auto t1 = std::chrono::steady_clock::now();
      c->stop();
      const auto t2 = std::chrono::steady_clock::now();
      std::printf("%5d  %7.2f  %6.2f\n", r, std::chrono::duration<double>(t1 - t0).count(),
                  std::chrono::duration<double>(t2 - t1).count());
      std::fflush(stdout);
    }
    boost::system::error_code ec;
    fs::remove_all(dir, ec);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cluster_start_stop_bench: %s\n", e.what());
    return 3;
  }
  return 0;
}
