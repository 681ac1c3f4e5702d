// The server processes of a cluster on this host, one slot per member: which is up, which is paused (SIGSTOP).
// What LocalCluster (Redis nodes, Sentinels) and LocalEnsemble (etcd, ZooKeeper members) both do to a member's
// process, in one place: start it, kill it, pause and resume it, and continue it instead of starting it again when
// it still runs. Not thread-safe: the owning cluster's mutex guards it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "sys/process.h"

namespace lockcheck {

class LocalMembers {
 public:
  // n slots, each down. Kills what ran in the old slots.
  void resize(size_t n);

  // Starts slot n's process (not paused). Throws ClusterError "cannot start <what>: <why>" when it cannot be
  // spawned. REQUIRES: slot n is down.
  ChildProcess& start(size_t n, const ProcessSpec& spec, const std::string& what);
  // SIGKILL (after SIGCONT) and reap; slot n is down. No-op when it already is.
  void kill(size_t n) noexcept;
  void kill_all() noexcept;

  // Up and not exited (reaps it if it has exited).
  bool running(size_t n) const;
  pid_t pid(size_t n) const;  // -1 when down

  // SIGSTOP. Throws ClusterError "cannot pause <name>: it is down" when it is.
  void pause(size_t n, const std::string& name);
  // SIGCONT. No-op when down.
  void resume(size_t n);
  // For a restart: true when slot n's process still runs (resumed if it was paused), so there is nothing to start;
  // false (and the slot emptied of an exited process) when it must be started.
  bool continue_if_running(size_t n);

 private:
  // Slot n's process (paused or not), or nullptr when it is down (never started, killed).
  ChildProcess* process(size_t n) const { return slots_.at(n).process.get(); }

  struct Slot {
    std::unique_ptr<ChildProcess> process;
    bool paused = false;
  };
  std::vector<Slot> slots_;
};

}  // namespace lockcheck
