// Start-up and teardown time of an ssh cluster (cluster/ssh_cluster.h), e.g. on scripts/ssh-testbed:
//   BUILD/bench/ssh_cluster_bench --hosts FILE [--nodes 5] [--repeat 3]
// Prints one line per round: start s, stop s. Never asserts on speed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <boost/filesystem.hpp>

#include "cluster/ssh_cluster.h"

int main(int argc, char** argv) {
  std::string hosts;
  int nodes = 5, repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--hosts")
      hosts = argv[i + 1];
    else if (a == "--nodes")
      nodes = std::atoi(argv[i + 1]);
    else if (a == "--repeat")
      repeat = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: ssh_cluster_bench --hosts FILE [--nodes N] [--repeat R]\n");
      return 2;
    }
  }
  if (hosts.empty()) {
    std::fprintf(stderr, "ssh_cluster_bench: --hosts FILE is required (scripts/ssh-testbed up 5 prints one)\n");
    return 2;
  }
  lockcheck::RunConfig cfg;
  cfg.cluster = "ssh";
  cfg.hosts = hosts;
  cfg.nodes = nodes;
  namespace fs = boost::filesystem;
  const fs::path dir = fs::temp_directory_path() / fs::unique_path("lockcheck-ssh-bench-%%%%%%");
  std::printf("round  start_s  stop_s  (%d nodes)\n", nodes);
  for (int r = 1; r <= repeat; ++r) {
    lockcheck::SshCluster c(cfg, (dir / std::to_string(r)).string());
    auto t0 = std::chrono::steady_clock::now();
    c.start();
    auto t1 = std::chrono::steady_clock::now();
    c.stop();
    auto t2 = std::chrono::steady_clock::now();
    std::printf("%5d  %7.2f  %6.2f\n", r, std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1).count());
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return 0;
}
