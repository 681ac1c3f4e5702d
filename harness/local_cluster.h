// The default backend: independent redis-server processes on loopback, no root and no Docker needed.
// Each node has its own port (free, chosen at start and kept across restarts), data dir nodes/nX/ and log
// nodes/nX.log under the run's folder. Persistence is off unless asked for (--persistence).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "harness/cluster.h"
#include "harness/config.h"
#include "harness/process.h"

namespace lockcheck {

struct LocalClusterOptions {
  int nodes = 5;
  Persistence persistence = Persistence::kNone;
  std::string redis_server = "redis-server";   // binary; a missing one is a ClusterError naming it
  std::string nodes_dir;                       // where nX/ and nX.log go; created if missing
  std::chrono::milliseconds start_timeout{10000};
  std::string name_prefix = "n";               // nodes are <prefix>1, <prefix>2, ...
  static LocalClusterOptions from(const RunConfig& c, const std::string& run_dir);
};

class LocalCluster : public Cluster {
 public:
  explicit LocalCluster(LocalClusterOptions opts);
  ~LocalCluster() override;  // stop()

  void start() override;
  void stop() noexcept override;
  const std::vector<NodeInfo>& nodes() const override { return nodes_; }

  void kill(size_t n) override;
  void restart(size_t n) override;
  void pause(size_t n) override;
  void resume(size_t n) override;
  void set_clock_offset(size_t n, std::chrono::nanoseconds offset) override;
  bool is_running(size_t n) const override;

  Endpoint endpoint_for(const std::string& party, size_t n) const override;
  void cut(const std::string& a, const std::string& b) override;
  void heal(const std::string& a, const std::string& b) override;
  void heal_all() override;
  void set_delay(const std::string& a, const std::string& b, std::chrono::milliseconds delay,
                 std::chrono::milliseconds jitter) override;

  // pid of node n's redis-server, or -1 when it is down.
  pid_t pid(size_t n) const;

 private:
  void spawn(size_t n);  // REQUIRES: mu_ held
  std::vector<std::string> argv_for(size_t n) const;

  LocalClusterOptions opts_;
  std::vector<NodeInfo> nodes_;
  std::vector<std::string> data_dirs_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<ChildProcess>> procs_;
  std::vector<bool> paused_;
};

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it back, close).
int free_loopback_port();

}  // namespace lockcheck
