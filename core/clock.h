// The harness's one clock: monotonic, ns since the run started. Never the wall clock: the nemesis moves wall
// clocks of nodes, and the history must not move with them.
#pragma once

#include <chrono>
#include <cstdint>

namespace lockcheck {

class MonotonicClock {
 public:
  MonotonicClock() : start_(std::chrono::steady_clock::now()) {}
  // ns since construction. Thread-safe.
  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count();
  }
  std::chrono::steady_clock::time_point start() const { return start_; }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace lockcheck
