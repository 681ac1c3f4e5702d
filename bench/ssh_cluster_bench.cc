// Start-up and teardown time of an ssh cluster (cluster/ssh_cluster.h), e.g. on scripts/ssh-testbed, or of a
// docker cluster (docker/docker_cluster.h):
//   BUILD/bench/ssh_cluster_bench --hosts FILE [--nodes 5] [--repeat 3] [--topology replicated]
//   BUILD/bench/ssh_cluster_bench --docker [--nodes 5] [--repeat 3] [--topology replicated]
// Prints one line per round: start s, stop s. Never asserts on speed.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <boost/filesystem.hpp>

#include "cluster/ssh_cluster.h"
#include "docker/docker_cluster.h"

int main(int argc, char** argv) {
  std::string hosts, topology = "independent";
  int nodes = 5, repeat = 3;
  bool docker = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--docker") {
      docker = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "ssh_cluster_bench: %s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--hosts")
      hosts = argv[i + 1];
    else if (a == "--nodes")
      nodes = std::atoi(argv[i + 1]);
    else if (a == "--topology")
      topology = argv[i + 1];
    else if (a == "--repeat")
      repeat = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: ssh_cluster_bench --hosts FILE | --docker [--nodes N] [--repeat R] [--topology T]\n");
      return 2;
    }
    ++i;
  }
  if (hosts.empty() && !docker) {
    std::fprintf(stderr, "ssh_cluster_bench: --hosts FILE is required (scripts/ssh-testbed up 5 prints one)\n");
    return 2;
  }
  lockcheck::RunConfig cfg;
  cfg.cluster = docker ? "docker" : "ssh";
  cfg.hosts = hosts;
  cfg.nodes = nodes;
  if (topology == "replicated") {
    cfg.topology = lockcheck::Topology::kReplicated;
  } else if (topology == "cluster") {
    cfg.topology = lockcheck::Topology::kCluster;
  } else if (topology != "independent") {
    std::fprintf(stderr, "ssh_cluster_bench: --topology must be independent, replicated or cluster\n");
    return 2;
  }
  namespace fs = boost::filesystem;
  const fs::path dir = fs::temp_directory_path() / fs::unique_path("lockcheck-ssh-bench-%%%%%%");
  std::printf("round  start_s  stop_s  (%s, %d nodes, %s)\n", cfg.cluster.c_str(), nodes, topology.c_str());
  for (int r = 1; r <= repeat; ++r) {
    std::unique_ptr<lockcheck::Cluster> c;
    if (docker) {
      c = std::make_unique<lockcheck::DockerCluster>(cfg, (dir / std::to_string(r)).string());
    } else {
      c = std::make_unique<lockcheck::SshCluster>(cfg, (dir / std::to_string(r)).string());
    }
    auto t0 = std::chrono::steady_clock::now();
    c->start();
    auto t1 = std::chrono::steady_clock::now();
    c->stop();
    auto t2 = std::chrono::steady_clock::now();
    std::printf("%5d  %7.2f  %6.2f\n", r, std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1).count());
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return 0;
}
