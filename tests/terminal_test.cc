// The verdict's colour (harness/terminal.h): on a terminal only, never with NO_COLOR set or TERM=dumb.
#include "harness/terminal.h"

#include <gtest/gtest.h>
#include <pty.h>
#include <unistd.h>

#include <poll.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "harness/runner.h"
#include "tests/support/temp_dir.h"

namespace lockcheck {
namespace {

// NO_COLOR and TERM as the test found them, put back at the end.
class TerminalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    save("NO_COLOR", no_color_);
    save("TERM", term_);
    ::unsetenv("NO_COLOR");
    ::setenv("TERM", "xterm", 1);
  }
  void TearDown() override {
    restore("NO_COLOR", no_color_);
    restore("TERM", term_);
    set_verdict_colour(false);
  }

 private:
  static void save(const char* name, std::optional<std::string>& v) {
    const char* s = std::getenv(name);
    if (s) v = s;
  }
  static void restore(const char* name, const std::optional<std::string>& v) {
    if (v) {
      ::setenv(name, v->c_str(), 1);
    } else {
      ::unsetenv(name);
    }
  }
  std::optional<std::string> no_color_, term_;
};

TEST_F(TerminalTest, ColourOnATerminalUnlessNoColorOrDumb) {
  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  EXPECT_TRUE(colour_wanted(slave));
  EXPECT_FALSE(colour_wanted(pipe_fds[1]));  // a pipe or a file: never
  ::setenv("NO_COLOR", "1", 1);
  EXPECT_FALSE(colour_wanted(slave));
  ::setenv("NO_COLOR", "", 1);  // present but empty: no-color.org says it does not count
  EXPECT_TRUE(colour_wanted(slave));
  ::unsetenv("NO_COLOR");
  ::setenv("TERM", "dumb", 1);
  EXPECT_FALSE(colour_wanted(slave));
  for (int fd : {master, slave, pipe_fds[0], pipe_fds[1]}) ::close(fd);
}

TEST_F(TerminalTest, TheVerdictLineIsColouredOnlyWhenTurnedOn) {
  const nlohmann::json verdict = {{"valid", "invalid"}, {"checkers", nlohmann::json::array()}};
  std::ostringstream plain;
  print_checker_lines(plain, verdict);
  EXPECT_EQ(plain.str(), "verdict: invalid\n");
  set_verdict_colour(true);
  std::ostringstream coloured;
  print_checker_lines(coloured, verdict);
  EXPECT_EQ(coloured.str(), "verdict: \033[1;31minvalid\033[0m\n");
  EXPECT_EQ(coloured_verdict("valid"), "\033[1;32mvalid\033[0m");
  EXPECT_EQ(coloured_verdict("unknown"), "\033[1;33munknown\033[0m");
}

// What the binary prints on a terminal for `check RUN --verdict-only` (a one-acquire history), with env set.
std::string on_a_terminal(const std::string& run, const char* no_color) {
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid == 0) {
    if (no_color) {
      ::setenv("NO_COLOR", no_color, 1);
    } else {
      ::unsetenv("NO_COLOR");
    }
    ::setenv("TERM", "xterm", 1);
    ::execl(LOCKCHECK_BINARY, LOCKCHECK_BINARY, "check", run.c_str(), "--verdict-only", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 1000) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;  // EIO once the child closed the terminal
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return out;
}

TEST_F(TerminalTest, TheBinaryColoursTheVerdictOnATerminalAndNotWithNoColor) {
  TempDir d;
  const std::string run = d.file("run");
  std::filesystem::create_directories(run);
  std::ofstream(run + "/config.json") << R"({"lock":"single","workload":"lock","nemesis":[]})";
  std::ofstream(run + "/history.jsonl")
      << R"({"index":0,"time":1000,"process":0,"type":"invoke","f":"acquire","key":"lock-0","value":null})" "\n"
      << R"({"index":1,"time":2000,"process":0,"type":"ok","f":"acquire","key":"lock-0","value":null})" "\n";
  EXPECT_NE(on_a_terminal(run, nullptr).find("verdict: \033[1;"), std::string::npos);
  const std::string plain = on_a_terminal(run, "1");
  EXPECT_NE(plain.find("verdict: "), std::string::npos) << plain;
  EXPECT_EQ(plain.find("\033["), std::string::npos) << plain;
}

}  // namespace
}  // namespace lockcheck
