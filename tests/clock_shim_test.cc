#include "cluster/clock_shim.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/redis_test_server.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

using namespace std::chrono_literals;
using testing_support::command;
using testing_support::connect;
using testing_support::ping;
using testing_support::RedisConn;
using testing_support::RedisTestServer;
using testing_support::Reply;

constexpr auto kTimeout = 2000ms;

// A temporary directory for one test, removed at the end.
off_t file_size(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// The real wall clock of this (unshimmed) process, in ms: what the node's TIME is compared against. The one
// place where a wall clock is the point of the test.
int64_t real_wall_ms() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// The node's TIME in ms.
int64_t node_time_ms(redisContext* c) {
  Reply r = command(c, {"TIME"});
  if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return -1;
  return std::stoll(std::string(r->element[0]->str, r->element[0]->len)) * 1000 +
         std::stoll(std::string(r->element[1]->str, r->element[1]->len)) / 1000;
}

// How far the node's wall clock is ahead of the real one, in ms (negative: behind).
int64_t node_skew_ms(redisContext* c) { return node_time_ms(c) - real_wall_ms(); }

int64_t pttl(redisContext* c, const std::string& key) {
  Reply r = command(c, {"PTTL", key});
  return r && r->type == REDIS_REPLY_INTEGER ? r->integer : -100;
}

std::string new_clock_file(const TempDir& dir) {
  const std::string path = dir.file("clock");
  create_clock_file(path);
  return path;
}

// A redis-server whose wall clock the test moves.
class ShimmedServerTest : public ::testing::Test {
 protected:
  ShimmedServerTest()
      : clock_file_(new_clock_file(dir_)),
        server_({{"LD_PRELOAD", clock_shim_library()}, {kClockFileEnv, clock_file_}}),
        conn_(connect(server_.endpoint(), kTimeout)) {}

  TempDir dir_;
  std::string clock_file_;
  RedisTestServer server_;  // started, and answering PING, or the constructor threw
  RedisConn conn_;
};

TEST(ClockFileTest, CreateWriteReadRoundTrip) {
  TempDir dir;
  const std::string path = dir.file("clock");
  create_clock_file(path);
  EXPECT_EQ(file_size(path), static_cast<off_t>(kClockFileBytes));
  EXPECT_EQ(read_clock_offset(path), 0ns);
  write_clock_offset(path, -20s);
  EXPECT_EQ(read_clock_offset(path), -20s);
  write_clock_offset(path, 40s + 123ns);
  EXPECT_EQ(read_clock_offset(path), 40s + 123ns);
  create_clock_file(path);  // resets, never shrinks
  EXPECT_EQ(read_clock_offset(path), 0ns);
  EXPECT_EQ(file_size(path), static_cast<off_t>(kClockFileBytes));
  const ClockSetting s{7, -3, 11};
  write_clock(path, s);
  EXPECT_EQ(read_clock(path), s);
}

// What the remote backends write with dd must be what the local writer stores: the setting in the slot of the
// next generation, then that generation in word 0.
TEST(ClockFileTest, EachWriteFillsTheOtherSlotThenMovesTheGeneration) {
  TempDir dir;
  const std::string path = dir.file("clock");
  create_clock_file(path);
  auto bytes = [&] {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(bytes(), std::string(kClockFileBytes, '\0')) << "a new file: generation 0, the real clock";
  const ClockSetting a{40, 2, 3}, b{-5, 6, 7};
  write_clock(path, a);
  EXPECT_EQ(bytes().substr(0, 8), clock_generation_bytes(1));
  EXPECT_EQ(bytes().substr(clock_slot_offset(1), kClockSlotBytes), clock_slot_bytes(a));
  write_clock(path, b);
  EXPECT_EQ(bytes().substr(0, 8), clock_generation_bytes(2));
  EXPECT_EQ(bytes().substr(clock_slot_offset(2), kClockSlotBytes), clock_slot_bytes(b));
  EXPECT_EQ(bytes().substr(clock_slot_offset(1), kClockSlotBytes), clock_slot_bytes(a)) << "the old slot stays";
  EXPECT_EQ(read_clock(path), b);
}

TEST(ClockSettingTest, ARateChangeStartsFromTheShiftOfThatMomentSoTheClockNeverJumps) {
  const int64_t s = 1000000000;
  const ClockSetting fast{5 * s, 100000000, 100 * s};  // +5 s at 100 s, then 10% fast
  EXPECT_EQ(fast.shift_at(100 * s), 5 * s);
  EXPECT_EQ(fast.shift_at(110 * s), 6 * s);
  EXPECT_EQ(fast.shift_at(90 * s), 4 * s);  // before the anchor: the same line
  const ClockSetting steady = clock_with_rate(fast, 110 * s, 0);
  EXPECT_EQ(steady.shift_at(110 * s), 6 * s);
  EXPECT_EQ(steady.shift_at(500 * s), 6 * s);
  const ClockSetting slow = clock_with_rate(steady, 200 * s, -500000000);  // half speed
  EXPECT_EQ(slow.shift_at(200 * s), 6 * s);
  EXPECT_EQ(slow.shift_at(210 * s), 1 * s);
  // 128-bit product: a day at +100% is past what 64 bits hold (8.64e13 ns x 1e9)
  const ClockSetting doubled{0, 1000000000, 0};
  EXPECT_EQ(doubled.shift_at(86400LL * s), 86400LL * s);
}

TEST(ClockFileTest, MissingOrShortFilesAreReportedNotCrashedOn) {
  TempDir dir;
  EXPECT_THROW(write_clock_offset(dir.file("missing"), 1s), ClockShimError);
  EXPECT_THROW(read_clock_offset(dir.file("missing")), ClockShimError);
  std::ofstream(dir.file("short")) << "abc";
  EXPECT_THROW(read_clock_offset(dir.file("short")), ClockShimError);
  create_clock_file(dir.file("short"));  // grows it to 8 bytes
  EXPECT_EQ(read_clock_offset(dir.file("short")), 0ns);
}

TEST(ClockShimLibraryTest, PointsAtTheBuiltLibraryUnlessOverridden) {
  const std::string built = clock_shim_library();
  EXPECT_EQ(::access(built.c_str(), R_OK), 0) << built;
  EXPECT_NE(built.find("lockcheck_clockshim"), std::string::npos) << built;
  ::setenv("LOCKCHECK_CLOCK_SHIM", "/elsewhere/shim.so", 1);
  EXPECT_EQ(clock_shim_library(), "/elsewhere/shim.so");
  ::unsetenv("LOCKCHECK_CLOCK_SHIM");
  EXPECT_EQ(clock_shim_library(), built);
}

int64_t to_ns(const timespec& ts) { return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec; }

// The shim loaded into this process with dlopen (RTLD_LOCAL: its symbols do not replace this process's own
// clock functions), its functions called directly and compared with the real ones. Only this test maps the
// shim, so its once-per-process mapping sees this test's file.
TEST(ClockShimInProcessTest, OffsetsTheRealtimeClocksOnlyAndFollowsRewrites) {
  TempDir dir;
  const std::string path = new_clock_file(dir);
  ::setenv(kClockFileEnv, path.c_str(), 1);
  void* lib = ::dlopen(clock_shim_library().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << ::dlerror();
  using ClockGettime = int (*)(clockid_t, timespec*);
  using Gettimeofday = int (*)(timeval*, void*);
  using Time = time_t (*)(time_t*);
  auto shim_clock_gettime = reinterpret_cast<ClockGettime>(::dlsym(lib, "clock_gettime"));
  auto shim_gettimeofday = reinterpret_cast<Gettimeofday>(::dlsym(lib, "gettimeofday"));
  auto shim_time = reinterpret_cast<Time>(::dlsym(lib, "time"));
  ASSERT_TRUE(shim_clock_gettime && shim_gettimeofday && shim_time);

  constexpr int64_t kSlackNs = 500 * 1000 * 1000;  // a loaded machine between two reads
  auto skew_ns = [&](clockid_t clock) {
    timespec shifted, real;
    EXPECT_EQ(shim_clock_gettime(clock, &shifted), 0);
    ::clock_gettime(clock, &real);
    EXPECT_GE(shifted.tv_nsec, 0);
    EXPECT_LT(shifted.tv_nsec, 1000000000);
    return to_ns(shifted) - to_ns(real);
  };
  const std::chrono::nanoseconds offsets[] = {40s + 999999999ns, -(1s + 500ms), -20s};
  for (std::chrono::nanoseconds offset : offsets) {
    SCOPED_TRACE(offset.count());
    write_clock_offset(path, offset);
    EXPECT_NEAR(static_cast<double>(skew_ns(CLOCK_REALTIME)), static_cast<double>(offset.count()), kSlackNs);
    EXPECT_NEAR(static_cast<double>(skew_ns(CLOCK_REALTIME_COARSE)), static_cast<double>(offset.count()), kSlackNs);
    EXPECT_NEAR(static_cast<double>(skew_ns(CLOCK_MONOTONIC)), 0.0, kSlackNs);
    EXPECT_NEAR(static_cast<double>(skew_ns(CLOCK_BOOTTIME)), 0.0, kSlackNs);
    timeval tv;
    ASSERT_EQ(shim_gettimeofday(&tv, nullptr), 0);
    const int64_t tv_ns = static_cast<int64_t>(tv.tv_sec) * 1000000000 + tv.tv_usec * 1000;
    EXPECT_NEAR(static_cast<double>(tv_ns - real_wall_ms() * 1000000), static_cast<double>(offset.count()),
                kSlackNs + 1e6);
    time_t out = 0;
    const time_t t = shim_time(&out);
    EXPECT_EQ(t, out);
    EXPECT_NEAR(static_cast<double>(t) * 1e9 - static_cast<double>(real_wall_ms()) * 1e6,
                static_cast<double>(offset.count()), 1.5e9);
  }
  write_clock_offset(path, 0ns);
  EXPECT_NEAR(static_cast<double>(skew_ns(CLOCK_REALTIME)), 0.0, kSlackNs);
  ::unsetenv(kClockFileEnv);
  ::dlclose(lib);
}

// A rate: the shim's realtime clocks advance (1 + rate) times as fast as the real one, from the value they had
// when the rate was set (no jump), and keep what they gained when it is set back to 0.
TEST(ClockShimInProcessTest, ARateRunsTheClockFastWithoutAJump) {
  TempDir dir;
  const std::string path = new_clock_file(dir);
  ::setenv(kClockFileEnv, path.c_str(), 1);
  void* lib = ::dlopen(clock_shim_library().c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << ::dlerror();
  auto shim_clock_gettime = reinterpret_cast<int (*)(clockid_t, timespec*)>(::dlsym(lib, "clock_gettime"));
  ASSERT_TRUE(shim_clock_gettime);
  auto skew_ns = [&] {
    timespec shifted, real;
    shim_clock_gettime(CLOCK_REALTIME, &shifted);
    ::clock_gettime(CLOCK_REALTIME, &real);
    return to_ns(shifted) - to_ns(real);
  };
  write_clock_offset(path, 3s);
  write_clock_rate(path, 100000000);  // +10%
  EXPECT_NEAR(static_cast<double>(skew_ns()), 3e9, 20e6) << "setting a rate must not move the clock";
  timespec r0, s0, r1, s1;
  ::clock_gettime(CLOCK_REALTIME, &r0);
  shim_clock_gettime(CLOCK_REALTIME, &s0);
  std::this_thread::sleep_for(1s);
  ::clock_gettime(CLOCK_REALTIME, &r1);
  shim_clock_gettime(CLOCK_REALTIME, &s1);
  const double ratio = static_cast<double>(to_ns(s1) - to_ns(s0)) / static_cast<double>(to_ns(r1) - to_ns(r0));
  EXPECT_NEAR(ratio, 1.1, 0.02);
  const int64_t before = skew_ns();
  write_clock_rate(path, 0);
  const int64_t after = skew_ns();
  EXPECT_NEAR(static_cast<double>(after), static_cast<double>(before), 20e6) << "nor must putting it back";
  EXPECT_GT(after, static_cast<int64_t>(3.09e9)) << "a second at +10% gains 100 ms";
  std::this_thread::sleep_for(200ms);
  EXPECT_NEAR(static_cast<double>(skew_ns()), static_cast<double>(after), 20e6) << "steady again";
  ::unsetenv(kClockFileEnv);
  ::dlclose(lib);
}

// The test of the rate: Redis expires a key by its wall clock, so on a node whose clock runs 10% fast a
// key with a TTL of T is gone after T / 1.1 of real time, while a client timing T on its own clock still
// trusts it.
TEST_F(ShimmedServerTest, AKeyOnANodeTenPercentFastExpiresAfterTOver1Point1) {
  write_clock_rate(clock_file_, 100000000);
  // A try whose probes came late (a loaded machine stalled this thread) says nothing: up to 3 tries, each with
  // its own key; the last one is judged whatever its timing.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::string key = "lock-" + std::to_string(attempt);
    const auto t0 = std::chrono::steady_clock::now();
    Reply set = command(conn_.get(), {"SET", key, "token", "NX", "PX", "3000"});
    ASSERT_TRUE(set && set->type == REDIS_REPLY_STATUS);
    auto exists_at = [&](std::chrono::milliseconds since) {
      std::this_thread::sleep_until(t0 + since);
      Reply r = command(conn_.get(), {"EXISTS", key});
      return r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    };
    // 3000 / 1.1 = 2727 ms of real time
    const bool early = exists_at(2450ms);
    const auto first_probe = std::chrono::steady_clock::now() - t0;
    const bool late = exists_at(2950ms);
    const bool stalled = first_probe >= 2700ms || std::chrono::steady_clock::now() - t0 >= 3000ms;
    if (stalled && attempt < 2) continue;
    EXPECT_TRUE(early) << "gone too early";
    EXPECT_FALSE(late) << "a 10% fast clock must end a 3 s key by 2.73 s";
    EXPECT_FALSE(stalled) << "the machine stalled in every try: the bounds above say nothing";
    break;
  }
}

TEST_F(ShimmedServerTest, RateZeroChangesNothing) {
  write_clock_rate(clock_file_, 0);
  EXPECT_NEAR(static_cast<double>(node_skew_ms(conn_.get())), 0.0, 1000.0);
  Reply set = command(conn_.get(), {"SET", "lock-0", "token", "NX", "PX", "1500"});
  ASSERT_TRUE(set && set->type == REDIS_REPLY_STATUS);
  std::this_thread::sleep_for(1200ms);
  const int64_t left = pttl(conn_.get(), "lock-0");
  EXPECT_GT(left, 0);
  EXPECT_LE(left, 300);
}

TEST_F(ShimmedServerTest, ServerStartsUnderTheShimAndKeepsTheRealTimeAtOffsetZero) {
  ASSERT_TRUE(ping(conn_.get()));
  EXPECT_NEAR(static_cast<double>(node_skew_ms(conn_.get())), 0.0, 1000.0);
}

TEST_F(ShimmedServerTest, TimeMovesByTheOffset) {
  write_clock_offset(clock_file_, 40s);
  EXPECT_NEAR(static_cast<double>(node_skew_ms(conn_.get())), 40000.0, 1000.0);
  write_clock_offset(clock_file_, -20s);
  EXPECT_NEAR(static_cast<double>(node_skew_ms(conn_.get())), -20000.0, 1000.0);
  write_clock_offset(clock_file_, 0s);
  EXPECT_NEAR(static_cast<double>(node_skew_ms(conn_.get())), 0.0, 1000.0);
}

// The test: Redis key expiry follows the wall clock.
TEST_F(ShimmedServerTest, AForwardJumpOf40sMakesA30sLockExpireAtOnce) {
  Reply set = command(conn_.get(), {"SET", "lock-0", "token", "NX", "PX", "30000"});
  ASSERT_TRUE(set && set->type == REDIS_REPLY_STATUS);
  const int64_t before = pttl(conn_.get(), "lock-0");
  EXPECT_GT(before, 25000);
  EXPECT_LE(before, 30000);

  write_clock_offset(clock_file_, 40s);

  // Lazy expiry on access: the very next command sees the key expired.
  Reply get = command(conn_.get(), {"GET", "lock-0"});
  ASSERT_TRUE(get);
  EXPECT_EQ(get->type, REDIS_REPLY_NIL);
  EXPECT_EQ(pttl(conn_.get(), "lock-0"), -2);
  // So another client can take the lock while the first still thinks it holds it.
  Reply again = command(conn_.get(), {"SET", "lock-0", "other", "NX", "PX", "30000"});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->type, REDIS_REPLY_STATUS);

  write_clock_offset(clock_file_, 0s);
  EXPECT_NEAR(static_cast<double>(node_skew_ms(conn_.get())), 0.0, 1000.0);
}

TEST_F(ShimmedServerTest, ABackwardJumpStretchesALockAndAResetRestoresIt) {
  Reply set = command(conn_.get(), {"SET", "lock-0", "token", "NX", "PX", "30000"});
  ASSERT_TRUE(set && set->type == REDIS_REPLY_STATUS);

  write_clock_offset(clock_file_, -20s);
  const int64_t stretched = pttl(conn_.get(), "lock-0");
  EXPECT_GT(stretched, 45000);
  EXPECT_LE(stretched, 50000);

  write_clock_offset(clock_file_, 0s);
  const int64_t restored = pttl(conn_.get(), "lock-0");
  EXPECT_GT(restored, 25000);
  EXPECT_LE(restored, 30000);
}

TEST(ClockShimPolicyTest, WithoutTheVariableTheShimIsInert) {
  RedisTestServer server({{"LD_PRELOAD", clock_shim_library()}});
  RedisConn c = connect(server.endpoint(), kTimeout);
  ASSERT_TRUE(ping(c.get()));
  EXPECT_NEAR(static_cast<double>(node_skew_ms(c.get())), 0.0, 1000.0);
}

TEST(ClockShimPolicyTest, AFileCreatedAfterStartIsPickedUpWithinSeconds) {
  TempDir dir;
  const std::string path = dir.file("clock");  // does not exist yet
  RedisTestServer server({{"LD_PRELOAD", clock_shim_library()}, {kClockFileEnv, path}});
  RedisConn c = connect(server.endpoint(), kTimeout);
  ASSERT_TRUE(ping(c.get()));
  EXPECT_NEAR(static_cast<double>(node_skew_ms(c.get())), 0.0, 1000.0);

  create_clock_file(path);
  write_clock_offset(path, 40s);
  // The shim retries at most once per second; allow a few.
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  int64_t skew = node_skew_ms(c.get());
  while (skew < 39000 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    skew = node_skew_ms(c.get());
  }
  EXPECT_NEAR(static_cast<double>(skew), 40000.0, 1000.0);
}

}  // namespace
}  // namespace lockcheck
