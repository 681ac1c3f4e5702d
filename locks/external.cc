// `external`: a lock client written in any language, run as a subprocess (--client-cmd "CMD ARGS", split into
// argv without a shell by split_command_line) that speaks JSON lines on its stdin and stdout. One subprocess
// per client process (per LockClient); the protocol is documented in locks/README-external.md:
//   harness -> client   {"op":"acquire","key":"lock-0","ttl_ms":1000,"nodes":["127.0.0.1:7001",...],
//                        "sentinels":[...],"op_timeout_ms":500,"fencing":false}
//                       {"op":"release","key":...,"nodes":...}   {"op":"extend","key":...,"ttl_ms":...}
//   client -> harness   {"ok":true,"token":12,"validity_ms":987}  or  {"ok":false,"error":"held"}
//                       or {"ok":false,"indeterminate":true,"error":"timeout"} (outcome unknown: info)
// Protocol 2 (every request carries "protocol":2): answers may add "keys" (the Redis keys the op wrote) and
// "reason" (held, not_held, timeout, unreachable, error); the client may write event lines at any time:
//   {"event":"hello","max_call_ms":N}   its own bound on one call: each answer is then awaited N + 1 s
//   {"event":"lost","key":K,"detail":D} its library said the lock on K is gone: LockOptions.on_lost, at once
// A reader thread reads the client's stdout all the time, so an event written while no request is outstanding
// is handled when it arrives, not when the next answer comes; answers go to the caller's thread.
// Every answer is bounded by client_timeout_ms (default op_timeout x nodes + 1 s, or the client's max_call_ms
// + 1 s after its hello; the first answer gets client_startup_ms more, default 5 s, for the interpreter or VM to
// start). A client that exits, writes anything but such JSON objects one per line (an answer while no request
// is outstanding included), or misses the deadline has its op recorded as info and is killed and reaped at once;
// the workload then retires the process, and its replacement starts a fresh subprocess. The destructor stops the
// reader and kills and reaps the subprocess, so a retired process never leaves one behind.
//
// Options (LockOptions.extra): client_cmd (required), client_timeout_ms, client_startup_ms,
// client_stderr_path (where the client's stderr goes, appended, its folder made if missing; default /dev/null).
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>
#include <thread>

#include "locks/external_protocol.h"
#include "locks/lock_extra.h"
#include "sys/process.h"

namespace lockcheck {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxLineBytes = 1 << 20;
const char* const kReasons[] = {"held", "not_held", "timeout", "unreachable", "error"};

int remaining_ms(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

class ExternalLock : public LockClient {
 public:
  explicit ExternalLock(const LockOptions& o) : on_lost_(o.on_lost) {
    const std::string cmd = extra_value<std::string>(o, "client_cmd", "");
    if (cmd.empty()) throw std::invalid_argument("--client-cmd: required with --lock external");
    std::vector<std::string> argv;
    try {
      argv = split_command_line(cmd);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--client-cmd: ") + e.what());
    }
    const int64_t def_timeout = o.op_timeout.count() * static_cast<int64_t>(std::max<size_t>(o.nodes.size(), 1)) + 1000;
    // An explicit client_timeout_ms is the user's bound and stays; the default gives way to the client's hello.
    timeout_fixed_ =
        o.extra.is_object() && o.extra.contains("client_timeout_ms") && !o.extra["client_timeout_ms"].is_null();
    timeout_ = std::chrono::milliseconds(extra_int(o, "client_timeout_ms", def_timeout, 1, 3600 * 1000));
    startup_ = std::chrono::milliseconds(extra_int(o, "client_startup_ms", 5000, 0, 3600 * 1000));
    base_ = nlohmann::json::object();
    nlohmann::json nodes = nlohmann::json::array(), sentinels = nlohmann::json::array();
    for (const auto& n : o.nodes) nodes.push_back(n.str());
    for (const auto& s : o.sentinels) sentinels.push_back(s.str());
    base_["protocol"] = 2;
    base_["nodes"] = nodes;
    if (!o.sentinels.empty()) base_["sentinels"] = sentinels;
    base_["op_timeout_ms"] = o.op_timeout.count();
    base_["fencing"] = o.fencing;
    ProcessSpec spec;
    spec.argv = argv;
    spec.pipe_stdin = true;
    spec.pipe_stdout = true;
    spec.stderr_path = extra_value<std::string>(o, "client_stderr_path", "");
    if (!spec.stderr_path.empty() && spec.stderr_path != "=stdout") {  // e.g. RUN_DIR/clients/p3.stderr
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(spec.stderr_path).parent_path(), ec);
    }
    ignore_sigpipe();  // a write to a crashed client's stdin must fail with EPIPE, not kill the harness
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
      throw std::runtime_error(std::string("external client: pipe2: ") + std::strerror(errno));
    }
    try {
      child_ = std::make_unique<ChildProcess>(spec);  // SpawnError names the program
    } catch (...) {
      close_wake();
      throw;
    }
    reader_ = std::thread([this, fd = child_->stdout_fd()] { read_loop(fd); });
  }

  ~ExternalLock() override {
    stop_reader();
    child_.reset();  // SIGKILL and reap
    close_wake();
  }

  LockResult acquire(const std::string& key, std::chrono::milliseconds ttl) override {
    return call("acquire", key, ttl.count());
  }
  LockResult release(const std::string& key) override { return call("release", key, -1); }
  LockResult extend(const std::string& key, std::chrono::milliseconds ttl) override {
    return call("extend", key, ttl.count());
  }
  std::optional<int> os_pid() const override {
    if (!child_) return std::nullopt;
    return static_cast<int>(child_->pid());
  }

 private:
  LockResult call(const char* op, const std::string& key, int64_t ttl_ms) {
    if (!child_) return LockResult::info("external client is gone: " + gone_);
    nlohmann::json req = base_;
    req["op"] = op;
    req["key"] = key;
    if (ttl_ms >= 0) req["ttl_ms"] = ttl_ms;
    const auto start = Clock::now();
    std::string why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!broken_.empty()) why = broken_;
      outstanding_ = true;
    }
    if (!why.empty()) return give_up(why);
    if (!write_line(req.dump() + "\n", start + timeout() + extra_startup(), &why)) return give_up(why);
    std::string line;
    if (!await_answer(start, &line, &why)) return give_up(why);
    answered_ = true;
    return parse_answer(line, start);
  }

  std::chrono::milliseconds extra_startup() const { return answered_ ? std::chrono::milliseconds(0) : startup_; }
  // The per-answer deadline now: the client's own bound (hello) when it gave one and the user did not.
  std::chrono::milliseconds timeout() const {
    const int64_t max_call = max_call_ms_.load();
    if (max_call < 0 || timeout_fixed_) return timeout_;
    return std::chrono::milliseconds(max_call + 1000);
  }

  // Waits for the answer to the request sent at start; a hello that comes meanwhile moves the deadline.
  bool await_answer(Clock::time_point start, std::string* line, std::string* why) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!answers_.empty()) {
        *line = std::move(answers_.front());
        answers_.pop_front();
        outstanding_ = false;
        return true;
      }
      if (!broken_.empty()) {
        *why = broken_;
        break;
      }
      if (eof_) {
        lock.unlock();
        *why = exit_text();
        return false;
      }
      const auto deadline = start + timeout() + extra_startup();
      if (Clock::now() >= deadline) {
        *why = "no answer within " + std::to_string(timeout().count()) + " ms" +
               (answered_ ? "" : " (+ " + std::to_string(startup_.count()) + " ms to start)");
        break;
      }
      // Wake up at least every 100 ms: a hello may have moved the deadline.
      cv_.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(100)));
    }
    return false;
  }

  // The client is unusable: stop the reader, kill and reap it now; this op and any later one are info.
  LockResult give_up(const std::string& why) {
    gone_ = why;
    stop_reader();
    child_.reset();
    return LockResult::info("external client: " + why);
  }

  void stop_reader() {
    if (!reader_.joinable()) return;
    const char b = 1;
    (void)!::write(wake_[1], &b, 1);
    reader_.join();
  }

  void close_wake() {
    for (int& fd : wake_) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }

  std::string exit_text() {
    auto st = child_->wait_for(std::chrono::milliseconds(100));
    return st ? "exited with status " + std::to_string(*st) : "closed its stdout";
  }

  bool write_line(const std::string& s, Clock::time_point deadline, std::string* why) {
    size_t done = 0;
    while (done < s.size()) {
      ssize_t w = ::write(child_->stdin_fd(), s.data() + done, s.size() - done);
      if (w > 0) {
        done += static_cast<size_t>(w);
        continue;
      }
      if (w < 0 && errno == EINTR) continue;
      if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        *why = errno == EPIPE ? exit_text() : std::string("write: ") + std::strerror(errno);
        return false;
      }
      pollfd p{child_->stdin_fd(), POLLOUT, 0};
      int r = ::poll(&p, 1, remaining_ms(deadline));
      if (r == 0) {
        *why = "does not read its stdin (no room within " + std::to_string(timeout().count()) + " ms)";
        return false;
      }
    }
    return true;
  }

  // The reader thread: every line the client writes, as it comes, until EOF, a protocol error or stop_reader.
  void read_loop(int fd) {
    std::string buffer;
    for (;;) {
      pollfd p[2] = {{fd, POLLIN, 0}, {wake_[0], POLLIN, 0}};
      int r = ::poll(p, 2, -1);  // bounded: stop_reader wakes it, and the client's EOF ends it
      if (r < 0 && errno == EINTR) continue;
      if (r < 0 || (p[1].revents & POLLIN)) return;
      char buf[4096];
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n == 0) {
        finish_reading("", true);
        return;
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
        finish_reading(std::string("read: ") + std::strerror(errno), false);
        return;
      }
      buffer.append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
        std::string line = buffer.substr(0, nl);
        buffer.erase(0, nl + 1);
        if (!take_line(line)) return;
      }
      if (buffer.size() > kMaxLineBytes) {
        finish_reading("answer longer than " + std::to_string(kMaxLineBytes) + " bytes without a newline", false);
        return;
      }
    }
  }

  void finish_reading(const std::string& broken, bool eof) {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_.empty()) broken_ = broken;
    eof_ = eof;
    cv_.notify_all();
  }

  // One line from the client: an event is handled here and now; an answer goes to the waiting caller. False
  // when the line breaks the protocol (the reader stops; the next or current call gives the client up).
  bool take_line(const std::string& line) {
    const ExternalLine l = classify_external_line(line);
    switch (l.kind) {
      case ExternalLine::Kind::kMalformedEvent:
        finish_reading("malformed event (" + l.error + "): " + line.substr(0, 200), false);
        return false;
      case ExternalLine::Kind::kHello:
        if (l.max_call_ms) {
          max_call_ms_.store(*l.max_call_ms);
          std::lock_guard<std::mutex> lock(mu_);
          cv_.notify_all();
        }
        return true;
      case ExternalLine::Kind::kLost:
        if (on_lost_) on_lost_(l.key, l.detail);
        return true;
      case ExternalLine::Kind::kOtherEvent:  // unknown events are ignored, as unknown fields are
        return true;
      case ExternalLine::Kind::kAnswer:
        break;
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!outstanding_ || !answers_.empty()) {
      broken_ = "an answer with no request outstanding: " + line.substr(0, 200);
      cv_.notify_all();
      return false;
    }
    answers_.push_back(line);
    cv_.notify_all();
    return true;
  }

  // sent: when the request was written (a validity the client measured cannot be older than that).
  LockResult parse_answer(const std::string& line, Clock::time_point sent) {
    auto ns = [](Clock::time_point t) {
      return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
    };
    const AnswerWindow window{ns(sent), ns(Clock::now())};
    std::string why;
    std::optional<LockResult> r = parse_external_answer(line, &why, &window);
    if (!r) return give_up("malformed answer (" + why + "): " + line.substr(0, 200));
    return *r;
  }

  const std::function<void(const std::string&, const std::string&)> on_lost_;
  std::chrono::milliseconds timeout_{0};
  bool timeout_fixed_ = false;  // client_timeout_ms was given: the client's hello does not change it
  std::chrono::milliseconds startup_{0};
  std::atomic<int64_t> max_call_ms_{-1};  // the client's hello; -1: none
  bool answered_ = false;                 // the client has answered once (it has started)
  nlohmann::json base_;                   // the fields every request carries
  std::unique_ptr<ChildProcess> child_;
  std::string gone_;  // why the client was given up
  int wake_[2] = {-1, -1};  // stop_reader writes to [1]; the reader polls [0]
  std::thread reader_;
  // Shared with the reader thread, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> answers_;  // answer lines not yet taken
  bool outstanding_ = false;         // a request was sent and its answer not yet taken
  bool eof_ = false;                 // the client closed its stdout
  std::string broken_;               // a protocol error the reader met (it stopped); empty: none
};

}  // namespace

bool is_known_reason(const std::string& reason) {
  for (const char* r : kReasons) {
    if (reason == r) return true;
  }
  return false;
}

const char* known_reasons() { return "held, not_held, timeout, unreachable, error"; }

std::unique_ptr<LockClient> make_external_lock(const LockOptions& o) { return std::make_unique<ExternalLock>(o); }

// This lock's line in the registry (locks/registry.cc): its name, what `lockcheck list` says of it, its factory.
LockAlgorithm external_lock() {
  return {"external",
          "a lock client in any language: a subprocess per client speaking JSON lines on stdin/stdout "
          "(--client-cmd)",
          "whatever the client gets wrong; a crash, a malformed answer or a missed deadline is recorded as info",
          make_external_lock,
          "client_timeout_ms, client_startup_ms, client_stderr_path",
          /*hands_out_tokens=*/false,
          /*protocol=*/"*",
          /*external=*/true};
}

}  // namespace lockcheck
