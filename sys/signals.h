// SIGINT and SIGTERM end a run the orderly way: the first one sets a flag that the run loop polls, so every
// scoped teardown (workers, nemesis, cluster) runs as usual. A second one is an emergency: SIGKILL every child
// process the harness started (kill_all_children) and exit at once with 128+signal.
#pragma once

#include <atomic>
#include <thread>

namespace lockcheck {

class InterruptGuard {
 public:
  // REQUIRES: called on the main thread before any other thread exists (threads inherit the blocked mask).
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  bool interrupted() const { return signal_.load() != 0; }
  int signal_number() const { return signal_.load(); }
  // The flag the run loop and workers watch; set on the first SIGINT/SIGTERM.
  const std::atomic<bool>& flag() const { return flag_; }

 private:
  std::atomic<int> signal_{0};
  std::atomic<bool> flag_{false};
  std::atomic<bool> done_{false};
  std::thread watcher_;
};

}  // namespace lockcheck
