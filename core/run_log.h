// lockcheck.log: what the harness did and when, one timestamped line each. Thread-safe.
#pragma once

#include <fstream>
#include <mutex>
#include <string>

#include "core/clock.h"

namespace lockcheck {

class RunLog {
 public:
  explicit RunLog(const std::string& path) : out_(path, std::ios::app) {}
  void log(const std::string& line) {
    std::lock_guard<std::mutex> lock(mu_);
    out_ << "[" << clock_.now_ns() / 1000000 << " ms] " << line << "\n" << std::flush;
  }

 private:
  MonotonicClock clock_;
  std::mutex mu_;
  std::ofstream out_;
};

}  // namespace lockcheck
