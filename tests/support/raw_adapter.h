// An adapter (locks/adapters.h) spoken to directly over its pipes, for the adapter tests (adapter_test,
// zookeeper_lock_test).
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "locks/adapters.h"
#include "sys/process.h"

namespace lockcheck {
namespace testing_util {

using std::chrono::milliseconds;

// Protocol 2 spoken to an adapter directly (requests written, every line read back), so that the adapters'
// own side (keys, typed reasons, hello and lost events) is tested whatever the harness reads of it.
class RawAdapter {
 public:
  RawAdapter(const std::string& name, const nlohmann::json& opts = {}) {
    ProcessSpec spec;
    spec.argv = adapter_argv(*find_lock_adapter(name), opts);
    spec.pipe_stdin = spec.pipe_stdout = true;
    child_ = std::make_unique<ChildProcess>(spec);
  }
  void send(nlohmann::json req) {
    const std::string line = req.dump() + "\n";
    size_t off = 0;
    const auto end = std::chrono::steady_clock::now() + milliseconds(5000);
    while (off < line.size() && std::chrono::steady_clock::now() < end) {
      const ssize_t n = ::write(child_->stdin_fd(), line.data() + off, line.size() - off);
      if (n > 0) off += static_cast<size_t>(n);
      else std::this_thread::sleep_for(milliseconds(5));
    }
    ASSERT_EQ(off, line.size()) << "the adapter took no request";
  }
  // The next line (answer or event), or null after `wait`.
  nlohmann::json next(milliseconds wait) {
    const auto end = std::chrono::steady_clock::now() + wait;
    while (true) {
      if (auto nl = buf_.find('\n'); nl != std::string::npos) {
        std::string line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return nlohmann::json::parse(line);
      }
      const auto left = std::chrono::duration_cast<milliseconds>(end - std::chrono::steady_clock::now()).count();
      if (left <= 0) return nullptr;
      pollfd p{child_->stdout_fd(), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char chunk[4096];
      const ssize_t n = ::read(child_->stdout_fd(), chunk, sizeof chunk);
      if (n <= 0) return nullptr;  // EOF: the adapter ended
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }
  // Reads up to the next answer; event lines on the way are kept in `events`.
  nlohmann::json answer(milliseconds wait = milliseconds(10000)) {
    for (nlohmann::json line = next(wait); !line.is_null(); line = next(wait)) {
      if (!line.contains("event")) return line;
      events.push_back(line);
    }
    return nullptr;
  }
  // Waits up to `wait` for an event named `name`, keeping every line read.
  bool wait_event(const std::string& name, milliseconds wait) {
    const auto end = std::chrono::steady_clock::now() + wait;
    for (const auto& e : events)
      if (e["event"] == name) return true;
    while (std::chrono::steady_clock::now() < end) {
      nlohmann::json line =
          next(std::chrono::duration_cast<milliseconds>(end - std::chrono::steady_clock::now()) + milliseconds(1));
      if (line.is_null()) return false;
      events.push_back(line);
      if (line.value("event", "") == name) return true;
    }
    return false;
  }
  // The adapter's process (to stop it with SIGSTOP, as client-pause does).
  pid_t pid() const { return child_->pid(); }
  std::vector<nlohmann::json> events;

 private:
  std::unique_ptr<ChildProcess> child_;
  std::string buf_;
};

}  // namespace testing_util
}  // namespace lockcheck
