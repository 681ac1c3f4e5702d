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
  EXPECT_EQ(file_size(path), 8);
  EXPECT_EQ(read_clock_offset(path), 0ns);
  write_clock_offset(path, -20s);
  EXPECT_EQ(read_clock_offset(path), -20s);
  write_clock_offset(path, 40s + 123ns);
  EXPECT_EQ(read_clock_offset(path), 40s + 123ns);
  create_clock_file(path);  // resets, never shrinks
  EXPECT_EQ(read_clock_offset(path), 0ns);
  EXPECT_EQ(file_size(path), 8);
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
