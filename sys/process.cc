#include "sys/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <boost/process.hpp>
#include <boost/process/extend.hpp>

namespace bp = boost::process;

namespace lockcheck {

namespace {

// The table of live children for kill_all_children: fixed size, lock-free, usable from a signal path.
constexpr size_t kMaxChildren = 4096;
std::array<std::atomic<pid_t>, kMaxChildren> g_children{};

void register_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, pid)) return;
  }
  // Table full: the child still gets PDEATHSIG and its owner's destructor; only the emergency path misses it.
}

void unregister_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

int open_output(const std::string& path) {
  if (path.empty()) return ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw SpawnError("cannot open " + path + ": " + std::strerror(errno));
  return fd;
}

int decode_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::optional<std::string> find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), X_OK) == 0) return program;
    return std::nullopt;
  }
  auto p = bp::search_path(program);
  if (p.empty()) return std::nullopt;
  return p.string();
}

struct ChildProcess::Impl {};

namespace {

// A pipe whose ends are both O_CLOEXEC (the child's end is dup2'ed onto 0 or 1, which clears the flag there);
// the harness's end is also O_NONBLOCK. Throws SpawnError.
void make_pipe(int fds[2], int harness_end) {
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SpawnError(std::string("pipe2: ") + std::strerror(errno));
  int flags = ::fcntl(fds[harness_end], F_GETFL);
  ::fcntl(fds[harness_end], F_SETFL, flags | O_NONBLOCK);
}

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

ChildProcess::ChildProcess(const ProcessSpec& spec) {
  if (spec.argv.empty()) throw SpawnError("empty command line");
  auto exe = find_program(spec.argv[0]);
  if (!exe) throw SpawnError(spec.argv[0] + ": program not found");
  int in_pipe[2] = {-1, -1};   // [0] child's stdin, [1] harness writes
  int out_pipe[2] = {-1, -1};  // [0] harness reads, [1] child's stdout
  int err_pipe[2] = {-1, -1};  // [0] harness reads, [1] child's stderr
  int out_fd = -1, err_fd = -1, in_fd = -1;
  auto close_all = [&] {
    close_fd(in_pipe[0]);
    close_fd(in_pipe[1]);
    close_fd(out_pipe[0]);
    close_fd(out_pipe[1]);
    close_fd(err_pipe[0]);
    close_fd(err_pipe[1]);
    close_fd(out_fd);
    close_fd(err_fd);
    close_fd(in_fd);
  };
  try {
    if (spec.pipe_stdin) make_pipe(in_pipe, 1);
    if (spec.pipe_stdout) make_pipe(out_pipe, 0);
    // The child's ends move into out_fd / in_fd (closed in the harness once the child has started).
    if (spec.pipe_stdout) {
      std::swap(out_fd, out_pipe[1]);
    } else {
      out_fd = open_output(spec.stdout_path);
    }
    if (spec.pipe_stderr) {
      make_pipe(err_pipe, 0);
      std::swap(err_fd, err_pipe[1]);
    } else {
      err_fd = spec.stderr_path == "=stdout" ? -1 : open_output(spec.stderr_path);
    }
    if (spec.pipe_stdin) {
      std::swap(in_fd, in_pipe[0]);
    } else {
      in_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    if (in_fd < 0) throw SpawnError(std::string("cannot open /dev/null: ") + std::strerror(errno));
  } catch (...) {
    close_all();
    throw;
  }
  const pid_t parent = ::getpid();
  const bool own_group = spec.own_process_group;
  bp::environment env = boost::this_process::environment();
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::vector<std::string> args(spec.argv.begin() + 1, spec.argv.end());
  // Runs in the child between fork and exec: only async-signal-safe calls.
  auto setup = [=](auto&) {
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);  // the harness blocks SIGINT/SIGTERM; the child must not
    ::signal(SIGPIPE, SIG_DFL);               // the harness ignores SIGPIPE; the child gets the default back
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (own_group) setpgid(0, 0);         // a terminal's Ctrl-C reaches the harness, not this child
    if (getppid() != parent) _exit(127);  // the harness died before prctl took effect
    // Nothing but 0, 1, 2 survives exec: the harness's sockets (hiredis connections are not close-on-exec) must
    // not stay open in a child, or a connection the harness closes would not look closed to its peer.
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
      for (int fd = 3; fd < 4096; ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);  // kernels before 5.11
    }
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd >= 0 ? err_fd : out_fd, 2);
  };
  try {
    bp::child c(
        bp::exe = *exe, bp::args = args, env,
        bp::start_dir = spec.cwd.empty() ? boost::filesystem::current_path() : boost::filesystem::path(spec.cwd),
        bp::extend::on_exec_setup = setup);
    pid_ = c.id();
    c.detach();  // we reap it ourselves with waitpid: bounded waits, no surprises from the destructor
  } catch (const std::exception& e) {
    close_all();
    throw SpawnError(spec.argv[0] + ": cannot start: " + e.what());
  }
  // Keep only the harness's ends of the pipes.
  stdin_fd_ = in_pipe[1];
  stdout_fd_ = out_pipe[0];
  stderr_fd_ = err_pipe[0];
  in_pipe[1] = -1;
  out_pipe[0] = -1;
  err_pipe[0] = -1;
  close_all();
  register_child(pid_);
}

void ChildProcess::close_stdin() { close_fd(stdin_fd_); }

ChildProcess::~ChildProcess() {
  kill_and_reap();
  close_fd(stdin_fd_);
  close_fd(stdout_fd_);
  close_fd(stderr_fd_);
}

void ChildProcess::signal(int sig) {
  if (!status_ && pid_ > 0) ::kill(pid_, sig);
}

bool ChildProcess::running() {
  if (status_ || pid_ <= 0) return false;
  int st = 0;
  pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    status_ = decode_status(st);
    unregister_child(pid_);
    return false;
  }
  if (r < 0 && errno == ECHILD) {
    status_ = -1;
    unregister_child(pid_);
    return false;
  }
  return true;
}

std::optional<int> ChildProcess::wait_for(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  while (running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  return status_;
}

void ChildProcess::kill_and_reap() {
  if (status_ || pid_ <= 0) return;
  ::kill(pid_, SIGCONT);
  ::kill(pid_, SIGKILL);
  // A SIGKILLed process exits promptly; bound the wait anyway (an uninterruptible sleep can delay it).
  wait_for(std::chrono::seconds(10));
}

CommandResult run_command(const std::vector<std::string>& argv, const CommandOptions& options) {
  constexpr size_t kCap = 16u << 20;                  // per stream; what is past it is read and dropped
  if (!options.stdin_data.empty()) ignore_sigpipe();  // a program that exits without reading its input
  ProcessSpec spec;
  spec.argv = argv;
  spec.env = options.env;
  spec.pipe_stdin = !options.stdin_data.empty();
  spec.pipe_stdout = true;
  spec.pipe_stderr = true;
  spec.own_process_group = options.own_process_group;
  ChildProcess child(spec);  // throws SpawnError
  CommandResult result;
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  size_t written = 0;
  bool out_open = true, err_open = true;
  if (options.stdin_data.empty()) child.close_stdin();
  char buf[65536];
  auto drain = [&](int fd, std::string& sink, bool& open) {
    while (open) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        if (sink.size() < kCap) sink.append(buf, std::min(static_cast<size_t>(n), kCap - sink.size()));
      } else if (n == 0) {
        open = false;
      } else {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) open = false;
        return;
      }
    }
  };
  // Until both output pipes reach EOF (the program and whatever it started closed them) or the deadline.
  while (out_open || err_open) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) break;
    pollfd fds[3];
    nfds_t n = 0;
    const bool feeding = child.stdin_fd() >= 0 && written < options.stdin_data.size();
    if (out_open) fds[n++] = {child.stdout_fd(), POLLIN, 0};
    if (err_open) fds[n++] = {child.stderr_fd(), POLLIN, 0};
    if (feeding) fds[n++] = {child.stdin_fd(), POLLOUT, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    const int r = ::poll(fds, n, static_cast<int>(std::min<int64_t>(left + 1, 100)));
    if (r < 0 && errno != EINTR) break;
    drain(child.stdout_fd(), result.out, out_open);
    drain(child.stderr_fd(), result.err, err_open);
    if (feeding) {
      const ssize_t w =
          ::write(child.stdin_fd(), options.stdin_data.data() + written, options.stdin_data.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
          written == options.stdin_data.size()) {
        child.close_stdin();  // all of it, or the program stopped reading: EOF
      }
    }
    // A program that exited while a grandchild still holds its pipes: keep what was read, stop waiting.
    if ((out_open || err_open) && !child.running()) {
      drain(child.stdout_fd(), result.out, out_open);
      drain(child.stderr_fd(), result.err, err_open);
      break;
    }
  }
  const auto left = deadline - std::chrono::steady_clock::now();
  auto st = child.wait_for(
      std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left), std::chrono::milliseconds(0)));
  if (!st) {
    result.timed_out = true;
    result.exit_code = -1;
    child.kill_and_reap();
  } else {
    result.exit_code = *st;
  }
  return result;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::map<std::string, std::string>& env) {
  CommandOptions o;
  o.timeout = timeout;
  o.env = env;
  return run_command(argv, o);
}

std::string describe_argv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    const bool plain = !a.empty() && a.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    if (plain) {
      s += a;
    } else {
      s += '\'';
      for (char c : a) s += (c == '\'') ? std::string("'\\''") : std::string(1, c);
      s += '\'';
    }
  }
  return s;
}

std::vector<std::string> split_command_line(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  enum class Quote { kNone, kSingle, kDouble } quote = Quote::kNone;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    switch (quote) {
      case Quote::kSingle:
        if (c == '\'') {
          quote = Quote::kNone;
        } else {
          word += c;
        }
        break;
      case Quote::kDouble:
        if (c == '"') {
          quote = Quote::kNone;
        } else if (c == '\\' && i + 1 < line.size() && (line[i + 1] == '"' || line[i + 1] == '\\')) {
          word += line[++i];
        } else {
          word += c;
        }
        break;
      case Quote::kNone:
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
          if (in_word) words.push_back(word);
          word.clear();
          in_word = false;
        } else if (c == '\'') {
          quote = Quote::kSingle;
          in_word = true;
        } else if (c == '"') {
          quote = Quote::kDouble;
          in_word = true;
        } else if (c == '\\') {
          if (i + 1 >= line.size()) throw std::invalid_argument("command line ends with a backslash: " + line);
          word += line[++i];
          in_word = true;
        } else {
          word += c;
          in_word = true;
        }
        break;
    }
  }
  if (quote != Quote::kNone) throw std::invalid_argument("unterminated quote in command line: " + line);
  if (in_word) words.push_back(word);
  if (words.empty()) throw std::invalid_argument("empty command line");
  return words;
}

void ignore_sigpipe() noexcept {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = SIG_IGN;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGPIPE, &sa, nullptr);
  });
}

void kill_all_children() noexcept {
  for (auto& slot : g_children) {
    pid_t pid = slot.load();
    if (pid > 0) {
      ::kill(pid, SIGCONT);
      ::kill(pid, SIGKILL);
    }
  }
}

}  // namespace lockcheck
