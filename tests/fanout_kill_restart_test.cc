// Regression test for the fan-out hang: a looping redlock client while nodes are killed and
// restarted under it, directly and through the fault proxy, for several cycles. Every call must return within
// its bound (connect + op timeout per try) and the loop must keep making progress.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/support/lock_test_util.h"

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
using testing_util::make_lock;
using testing_util::Proxy;
using testing_util::TestCluster;

void loop_under_kill_and_restart(Proxy proxy, const char* algorithm) {
  TestCluster c(5, "independent", proxy);
  LockOptions o = c.options(milliseconds(200));
  o.connect_timeout = milliseconds(200);
  o.extra["retry_count"] = 0;
  std::atomic<bool> stop{false};
  std::atomic<int64_t> calls{0}, slowest_ms{0};
  std::thread client([&] {
    auto lock = make_lock(algorithm, o);
    while (!stop.load()) {
      for (const char* f : {"acquire", "release"}) {
        const auto t0 = std::chrono::steady_clock::now();
        if (f[0] == 'a') {
          lock->acquire("lock-0", milliseconds(300));
        } else {
          lock->release("lock-0");
        }
        const int64_t ms = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
        if (ms > slowest_ms.load()) slowest_ms.store(ms);
        ++calls;
      }
    }
  });
  // Six cycles: kill two nodes, let the client loop against the dead ports, restart them, let it reconnect.
  for (int cycle = 0; cycle < 6; ++cycle) {
    const size_t a = static_cast<size_t>(cycle % 5), b = static_cast<size_t>((cycle + 2) % 5);
    c.cluster->kill(a);
    c.cluster->kill(b);
    std::this_thread::sleep_for(milliseconds(400));
    const int64_t before = calls.load();
    c.cluster->restart(a);
    c.cluster->restart(b);
    // Progress within 3 s: one sequential call may take up to 5 x (connect + op timeout) = 2 s.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (calls.load() <= before + 1 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(milliseconds(20));
    }
    EXPECT_GT(calls.load(), before + 1) << "cycle " << cycle << ": the client made no progress";
  }
  stop.store(true);
  // A call is bounded by connect + op timeout (parallel) or their sum over five nodes (sequential): the join
  // comes well within 5 s or the client is stuck.
  const auto t0 = std::chrono::steady_clock::now();
  client.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_LE(slowest_ms.load(), std::string(algorithm) == "redlock" ? 1000 : 3000)
      << "the slowest call took " << slowest_ms.load() << " ms";
  EXPECT_GT(calls.load(), 20);
}

TEST(FanoutKillRestartTest, RedlockDirect) { loop_under_kill_and_restart(Proxy::kOff, "redlock"); }
TEST(FanoutKillRestartTest, RedlockThroughTheProxy) { loop_under_kill_and_restart(Proxy::kOn, "redlock"); }
TEST(FanoutKillRestartTest, SequentialThroughTheProxy) {
  loop_under_kill_and_restart(Proxy::kOn, "redlock-sequential");
}

}  // namespace
}  // namespace lockcheck
