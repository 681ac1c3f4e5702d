// ChildProcess with stdin/stdout pipes, split_command_line, and ignore_sigpipe (sys/process.h).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>

#include "sys/process.h"

namespace lockcheck {
namespace {

// Reads from fd until a newline or 5 s pass.
std::string read_line(int fd) {
  std::string s;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (s.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[256];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
  }
  return s;
}

TEST(SplitCommandLineTest, SplitsOnBlanksAndHonoursQuotes) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_command_line("python3 client.py"), (V{"python3", "client.py"}));
  EXPECT_EQ(split_command_line("  a\tb \n c  "), (V{"a", "b", "c"}));
  EXPECT_EQ(split_command_line("python3 \"my client.py\" --flag 'a b'"),
            (V{"python3", "my client.py", "--flag", "a b"}));
  EXPECT_EQ(split_command_line("x 'it''s' \"say \\\"hi\\\"\" a\\ b"), (V{"x", "its", "say \"hi\"", "a b"}));
  EXPECT_EQ(split_command_line("'' x"), (V{"", "x"}));
  EXPECT_EQ(split_command_line("'$HOME' \"*\""), (V{"$HOME", "*"}));  // no expansion of any kind
}

TEST(SplitCommandLineTest, RejectsBadInput) {
  EXPECT_THROW(split_command_line("a 'b"), std::invalid_argument);
  EXPECT_THROW(split_command_line("a \"b"), std::invalid_argument);
  EXPECT_THROW(split_command_line("a\\"), std::invalid_argument);
  EXPECT_THROW(split_command_line("   "), std::invalid_argument);
}

TEST(ChildProcessPipesTest, TalksToTheChildThroughItsStdinAndStdout) {
  ProcessSpec spec;
  spec.argv = {"cat"};
  spec.pipe_stdin = true;
  spec.pipe_stdout = true;
  ChildProcess child(spec);
  ASSERT_GE(child.stdin_fd(), 0);
  ASSERT_GE(child.stdout_fd(), 0);
  const std::string line = "{\"op\":\"acquire\"}\n";
  ASSERT_EQ(::write(child.stdin_fd(), line.data(), line.size()), static_cast<ssize_t>(line.size()));
  EXPECT_EQ(read_line(child.stdout_fd()), line);
  child.close_stdin();  // EOF: cat exits
  auto st = child.wait_for(std::chrono::seconds(5));
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(*st, 0);
}

TEST(ChildProcessPipesTest, WritingToADeadChildFailsWithEpipe) {
  ignore_sigpipe();
  ProcessSpec spec;
  spec.argv = {"true"};
  spec.pipe_stdin = true;
  ChildProcess child(spec);
  ASSERT_TRUE(child.wait_for(std::chrono::seconds(5)).has_value());
  const char c = 'x';
  EXPECT_EQ(::write(child.stdin_fd(), &c, 1), -1);
  EXPECT_EQ(errno, EPIPE);
}

TEST(ChildProcessPipesTest, PipesAreNotInheritedByOtherChildren) {
  ProcessSpec spec;
  spec.argv = {"cat"};
  spec.pipe_stdin = true;
  spec.pipe_stdout = true;
  ChildProcess first(spec);
  // A second child must not hold first's stdin write end: otherwise closing it would not give cat its EOF.
  ProcessSpec other;
  other.argv = {"sleep", "5"};
  ChildProcess second(other);
  first.close_stdin();
  EXPECT_TRUE(first.wait_for(std::chrono::seconds(3)).has_value());
}

TEST(ChildProcessPipesTest, KillAndReapEndsAChildThatNeverReads) {
  ProcessSpec spec;
  spec.argv = {"sleep", "60"};
  spec.pipe_stdin = true;
  spec.pipe_stdout = true;
  ChildProcess child(spec);
  const pid_t pid = child.pid();
  child.kill_and_reap();
  EXPECT_FALSE(child.running());
  EXPECT_EQ(::kill(pid, 0), -1);  // reaped: no zombie left
}

// run_command, the one spawner: bounded, feeds stdin, captures both streams, exit codes as 128+signal, and the
// program inherits none of the harness's descriptors.
TEST(RunCommandTest, BoundsItsWaitFeedsStdinAndInheritsNoDescriptor) {
  CommandOptions options;
  options.timeout = std::chrono::milliseconds(200);
  const auto t0 = std::chrono::steady_clock::now();
  CommandResult r = run_command({"/bin/sleep", "5"}, options);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.exit_code, -1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
  options.timeout = std::chrono::seconds(10);
  options.stdin_data = "hello\n";
  r = run_command({"/bin/cat"}, options);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.out, "hello\n");
  // A large input and output both flow (neither side blocks the other).
  options.stdin_data = std::string(3 << 20, 'x');
  r = run_command({"/bin/cat"}, options);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.out.size(), options.stdin_data.size());
  options.stdin_data.clear();
  r = run_command({"/bin/ls", "/nonexistent-lockcheck"}, options);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.err, "");
  r = run_command({"/bin/sh", "-c", "kill -TERM $$"}, options);
  EXPECT_EQ(r.exit_code, 128 + SIGTERM);
  EXPECT_THROW(run_command({"/nonexistent-lockcheck/x"}, options), std::runtime_error);

  int fd = ::open("/dev/null", O_RDONLY);  // not close-on-exec
  ASSERT_GE(fd, 3);
  r = run_command({"/bin/ls", "/proc/self/fd"}, options);
  ::close(fd);
  EXPECT_EQ(r.out, "0\n1\n2\n3\n");  // stdin, stdout, stderr and ls's own listing
}

}  // namespace
}  // namespace lockcheck
