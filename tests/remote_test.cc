// The Remote seam's processes and files (cluster/remote.h), on this machine: LocalRemote's own children (started
// from a thread that then ends: they live on, as the local backend's restarts from the nemesis thread do), and the
// default implementations every transport shares (constant shell scripts through exec), called on the same host.
#include "cluster/remote.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <fstream>
#include <thread>

#include "core/cluster.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_util.h"

namespace lockcheck {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kTimeout{10000};

// The state letter of pid in /proc (R, S, T, Z ...), '?' when it is gone.
char state_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  std::getline(in, s);
  const auto close = s.rfind(')');
  return close != std::string::npos && close + 2 < s.size() ? s[close + 2] : '?';
}

bool stopped_within(int pid, bool stopped) {
  for (int i = 0; i < 100; ++i) {
    if ((state_of(pid) == 'T') == stopped) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What every implementation of the process seam must do, with start, signal, kill and running taken from one of
// them (LocalRemote's own, or the shared scripts).
void expect_process_seam(const Remote& r, const TempDir& dir, bool own) {
  ProcessStart p;
  p.argv = {"sh", "-c", "echo started; exec sleep 60"};
  p.log = dir.str() + "/log";
  p.pid_file = dir.str() + "/pid";
  std::ofstream(dir.str() + "/stale") << "x";
  p.remove_first = {dir.str() + "/stale"};
  int pid = 0;
  // Started from a thread that ends at once: the server lives on.
  std::thread([&] { pid = own ? r.start_process(p, kTimeout) : r.Remote::start_process(p, kTimeout); }).join();
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(own ? r.process_running(pid, kTimeout) : r.Remote::process_running(pid, kTimeout));
  EXPECT_EQ(read_file(p.pid_file), std::to_string(pid) + "\n");
  EXPECT_FALSE(std::ifstream(dir.str() + "/stale").good()) << "remove_first was not removed";
  for (int i = 0; i < 100 && read_file(p.log).empty(); ++i) std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(read_file(p.log), "started\n");
  own ? r.signal_process(pid, "STOP", kTimeout) : r.Remote::signal_process(pid, "STOP", kTimeout);
  EXPECT_TRUE(stopped_within(pid, true));
  own ? r.signal_process(pid, "CONT", kTimeout) : r.Remote::signal_process(pid, "CONT", kTimeout);
  EXPECT_TRUE(stopped_within(pid, false));
  own ? r.signal_process(pid, "STOP", kTimeout) : r.Remote::signal_process(pid, "STOP", kTimeout);
  own ? r.kill_process(pid, kTimeout) : r.Remote::kill_process(pid, kTimeout);  // a stopped one dies too
  EXPECT_FALSE(own ? r.process_running(pid, kTimeout) : r.Remote::process_running(pid, kTimeout));
  // The script's server is not our child: it is reaped by whoever adopted it; ours is reaped by kill_process.
  if (own) EXPECT_FALSE(testing_util::process_alive(pid));
  own ? r.kill_process(pid, kTimeout) : r.Remote::kill_process(pid, kTimeout);  // one already gone is fine

  // Several at once (a cluster's stop), one of them stopped, one already gone: all are gone after.
  std::vector<int> pids;
  for (int i = 0; i < 3; ++i) {
    ProcessStart q;
    q.argv = {"sleep", "60"};
    q.log = dir.str() + "/log" + std::to_string(i);
    std::thread([&] { pids.push_back(own ? r.start_process(q, kTimeout) : r.Remote::start_process(q, kTimeout)); })
        .join();
  }
  own ? r.signal_process(pids[1], "STOP", kTimeout) : r.Remote::signal_process(pids[1], "STOP", kTimeout);
  pids.push_back(pid);  // gone
  own ? r.kill_processes(pids, kTimeout) : r.Remote::kill_processes(pids, kTimeout);
  for (int q : pids) {
    EXPECT_FALSE(own ? r.process_running(q, kTimeout) : r.Remote::process_running(q, kTimeout)) << q;
  }
  // Started with no pid file: nothing is removed or written in its place (not /dev/null).
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is no longer a device";

  // A program the host cannot run fails the start, naming it.
  p.argv = {"/nonexistent/server"};
  try {
    own ? r.start_process(p, kTimeout) : r.Remote::start_process(p, kTimeout);
    ADD_FAILURE() << "started a program that does not exist";
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/server"), std::string::npos) << e.what();
  }
}

TEST(LocalRemoteTest, ItsOwnChildrenStartStopContinueAndDie) {
  TempDir dir;
  LocalRemote r;
  expect_process_seam(r, dir, true);
}

TEST(LocalRemoteTest, TheTransportsScriptsDoTheSameOnThisHost) {
  TempDir dir;
  LocalRemote r;
  expect_process_seam(r, dir, false);
}

TEST(LocalRemoteTest, DestructorKillsWhatItStarted) {
  int pid = 0;
  {
    LocalRemote r;
    ProcessStart p;
    p.argv = {"sleep", "60"};
    TempDir dir;
    p.log = dir.str() + "/log";
    pid = r.start_process(p, kTimeout);
    ASSERT_TRUE(testing_util::process_alive(pid));
  }
  EXPECT_FALSE(testing_util::process_alive(pid));
}

TEST(LocalRemoteTest, WriteAtWritesInPlaceWithBothImplementations) {
  TempDir dir;
  LocalRemote r;
  const std::string f = dir.str() + "/file";
  std::ofstream(f) << "0123456789";
  r.write_at(f, 2, "ab", kTimeout);
  EXPECT_EQ(read_file(f), "01ab456789");
  r.Remote::write_at(f, 7, "XYZ", kTimeout);
  EXPECT_EQ(read_file(f), "01ab456XYZ");
  EXPECT_THROW(r.write_at(dir.str() + "/missing", 0, "x", kTimeout), ClusterError);
}

}  // namespace
}  // namespace lockcheck
