// `external`: a lock client written in any language, run as a subprocess (--client-cmd "CMD ARGS", split into
// argv without a shell by split_command_line) that speaks JSON lines on its stdin and stdout. One subprocess
// per client process (per LockClient); the protocol is documented in locks/README-external.md:
//   harness -> client   {"op":"acquire","key":"lock-0","ttl_ms":1000,"nodes":["127.0.0.1:7001",...],
//                        "sentinels":[...],"op_timeout_ms":500,"fencing":false}
//                       {"op":"release","key":...,"nodes":...}   {"op":"extend","key":...,"ttl_ms":...}
//   client -> harness   {"ok":true,"token":12,"validity_ms":987}  or  {"ok":false,"error":"held"}
//                       or {"ok":false,"indeterminate":true,"error":"timeout"} (outcome unknown: info)
// Every answer is bounded by client_timeout_ms (default op_timeout x nodes + 1 s; the first answer gets
// client_startup_ms more, default 5 s, for the interpreter or VM to start). A client that exits, writes
// anything but one such JSON object per line, or misses the deadline has its op recorded as info and is killed
// and reaped at once; the workload then retires the process, and its replacement starts a fresh subprocess.
// The destructor kills and reaps the subprocess, so a retired process never leaves one behind.
//
// Options (LockOptions.extra): client_cmd (required), client_timeout_ms, client_startup_ms,
// client_stderr_path (where the client's stderr goes, appended, its folder made if missing; default /dev/null).
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "locks/lock_extra.h"
#include "sys/process.h"

namespace lockcheck {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxLineBytes = 1 << 20;

int remaining_ms(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(std::min<int64_t>(ms, 1 << 30));
}

class ExternalLock : public LockClient {
 public:
  explicit ExternalLock(const LockOptions& o) {
    const std::string cmd = extra_value<std::string>(o, "client_cmd", "");
    if (cmd.empty()) throw std::invalid_argument("--client-cmd: required with --lock external");
    std::vector<std::string> argv;
    try {
      argv = split_command_line(cmd);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--client-cmd: ") + e.what());
    }
    const int64_t def_timeout = o.op_timeout.count() * static_cast<int64_t>(std::max<size_t>(o.nodes.size(), 1)) + 1000;
    timeout_ = std::chrono::milliseconds(extra_int(o, "client_timeout_ms", def_timeout, 1, 3600 * 1000));
    startup_ = std::chrono::milliseconds(extra_int(o, "client_startup_ms", 5000, 0, 3600 * 1000));
    base_ = nlohmann::json::object();
    nlohmann::json nodes = nlohmann::json::array(), sentinels = nlohmann::json::array();
    for (const auto& n : o.nodes) nodes.push_back(n.str());
    for (const auto& s : o.sentinels) sentinels.push_back(s.str());
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
    child_ = std::make_unique<ChildProcess>(spec);  // SpawnError names the program
  }

  ~ExternalLock() override { child_.reset(); }  // SIGKILL and reap

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
    const auto deadline = Clock::now() + timeout_ + (answered_ ? std::chrono::milliseconds(0) : startup_);
    std::string why;
    if (!write_line(req.dump() + "\n", deadline, &why)) return give_up(why);
    std::string line;
    if (!read_line(deadline, &line, &why)) return give_up(why);
    answered_ = true;
    return parse_answer(line);
  }

  // The client is unusable: kill and reap it now; this op and any later one are info.
  LockResult give_up(const std::string& why) {
    gone_ = why;
    child_.reset();
    return LockResult::info("external client: " + why);
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
        *why = "does not read its stdin (no room within " + std::to_string(timeout_.count()) + " ms)";
        return false;
      }
    }
    return true;
  }

  bool read_line(Clock::time_point deadline, std::string* line, std::string* why) {
    for (;;) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        *line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return true;
      }
      if (buffer_.size() > kMaxLineBytes) {
        *why = "answer longer than " + std::to_string(kMaxLineBytes) + " bytes without a newline";
        return false;
      }
      pollfd p{child_->stdout_fd(), POLLIN, 0};
      int r = ::poll(&p, 1, remaining_ms(deadline));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) {
        *why = "no answer within " + std::to_string(timeout_.count()) + " ms" +
               (answered_ ? "" : " (+ " + std::to_string(startup_.count()) + " ms to start)");
        return false;
      }
      char buf[4096];
      ssize_t n = ::read(child_->stdout_fd(), buf, sizeof buf);
      if (n > 0) {
        buffer_.append(buf, static_cast<size_t>(n));
      } else if (n == 0) {
        *why = exit_text();
        return false;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        *why = std::string("read: ") + std::strerror(errno);
        return false;
      }
    }
  }

  LockResult parse_answer(const std::string& line) {
    nlohmann::json a;
    try {
      a = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error&) {
      return give_up("malformed answer (not JSON): " + line.substr(0, 200));
    }
    auto bad = [&](const char* what) {
      return give_up(std::string("malformed answer (") + what + "): " + line.substr(0, 200));
    };
    if (!a.is_object()) return bad("not an object");
    auto ok = a.find("ok");
    if (ok == a.end() || !ok->is_boolean()) return bad("\"ok\" must be true or false");
    auto field = [&](const char* name) {
      auto it = a.find(name);
      return it == a.end() || it->is_null() ? nullptr : &*it;
    };
    const nlohmann::json* token = field("token");
    const nlohmann::json* validity = field("validity_ms");
    const nlohmann::json* error = field("error");
    const nlohmann::json* indeterminate = field("indeterminate");
    if (token && !token->is_number_integer()) return bad("\"token\" must be an integer");
    if (validity && !validity->is_number_integer()) return bad("\"validity_ms\" must be an integer");
    if (error && !error->is_string()) return bad("\"error\" must be a string");
    if (indeterminate && !indeterminate->is_boolean()) return bad("\"indeterminate\" must be true or false");
    const std::string err = error ? error->get<std::string>() : "";
    if (!ok->get<bool>()) {
      if (indeterminate && indeterminate->get<bool>()) return LockResult::info(err.empty() ? "indeterminate" : err);
      return LockResult::fail(err.empty() ? "refused" : err);
    }
    LockResult res = LockResult::ok();
    if (token) res.token = token->get<int64_t>();
    if (validity) res.validity_ms = validity->get<int64_t>();
    return res;
  }

  std::chrono::milliseconds timeout_{0};
  std::chrono::milliseconds startup_{0};
  bool answered_ = false;  // the client has answered once (it has started)
  nlohmann::json base_;    // the fields every request carries
  std::unique_ptr<ChildProcess> child_;
  std::string buffer_;  // bytes read past the last answer
  std::string gone_;    // why the client was given up
};

}  // namespace

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
          Topology::kIndependent,
          /*external=*/true};
}

}  // namespace lockcheck
