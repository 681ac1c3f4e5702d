// Test helpers: a real redis-server on a free loopback port for the life of one object, and a hiredis
// connection with timeouts. Header-only; used by the tests that need a node (fault proxy, clock shim).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/filesystem.hpp>
#include <boost/process.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/cluster.h"

namespace lockcheck {
namespace testing_support {

// A port that was free a moment ago (bind to port 0, read it back, release it). Racy by nature; RedisTestServer
// retries with another port if the server cannot bind it.
inline int pick_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("cannot bind a free loopback port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

struct RedisContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using RedisConn = std::unique_ptr<redisContext, RedisContextFree>;

struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;

// Connects with connect and read/write timeouts of `timeout`. Returns the context even when it is in error
// (check ->err); nullptr only if hiredis could not allocate one.
inline RedisConn connect(const Endpoint& at, std::chrono::milliseconds timeout) {
  RedisConn c(redisConnectWithTimeout(at.host.c_str(), at.port, to_timeval(timeout)));
  if (c && c->err == 0) redisSetTimeout(c.get(), to_timeval(timeout));
  return c;
}

// argv form: no format-string parsing.
inline Reply command(redisContext* c, const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  return Reply(static_cast<redisReply*>(redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data())));
}

// True when a PING over c gets +PONG back (within c's timeout).
inline bool ping(redisContext* c) {
  if (c == nullptr || c->err != 0) return false;
  Reply r = command(c, {"PING"});
  return r && r->type == REDIS_REPLY_STATUS && std::string(r->str, r->len) == "PONG";
}

// A redis-server on 127.0.0.1 with no persistence and its own temporary dir, started by the constructor
// (which waits, bounded, until it answers PING) and killed by the destructor. extra_env is added to the
// environment of the server (e.g. LD_PRELOAD).
class RedisTestServer {
 public:
  explicit RedisTestServer(std::vector<std::pair<std::string, std::string>> extra_env = {})
      : extra_env_(std::move(extra_env)) {
    std::string templ = ::testing::TempDir() + "/lockcheck-redis-XXXXXX";
    if (::mkdtemp(&templ[0]) == nullptr) throw std::runtime_error("mkdtemp failed under " + ::testing::TempDir());
    dir_ = templ;
    std::string last_error;
    for (int attempt = 0; attempt < 3; ++attempt) {
      port_ = pick_free_port();
      if (start_and_wait(&last_error)) return;
      kill_child();
      last_error += "; log: " + log_tail();
    }
    boost::system::error_code ignored;
    boost::filesystem::remove_all(dir_, ignored);
    throw std::runtime_error("redis-server did not start: " + last_error);
  }

  ~RedisTestServer() {
    kill_child();
    boost::system::error_code ignored;
    boost::filesystem::remove_all(dir_, ignored);
  }

  RedisTestServer(const RedisTestServer&) = delete;
  RedisTestServer& operator=(const RedisTestServer&) = delete;

  Endpoint endpoint() const { return Endpoint{"127.0.0.1", port_}; }
  const std::string& dir() const { return dir_; }
  bool running() { return child_.valid() && child_.running(); }

 private:
  static constexpr auto kStartTimeout = std::chrono::seconds(10);

  std::string log_tail() const {
    std::ifstream in(dir_ + "/redis.log");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text.size() > 2000 ? text.substr(text.size() - 2000) : text;
  }

  bool start_and_wait(std::string* error) {
    namespace bp = boost::process;
    bp::environment env = boost::this_process::environment();
    for (const auto& kv : extra_env_) env[kv.first] = kv.second;
    const std::string log = dir_ + "/redis.log";
    std::vector<std::string> args = {
        "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
        dir_,     "--logfile",           log};
    child_ = bp::child(bp::search_path("redis-server"), bp::args(args), env, bp::std_in.close(), bp::std_out > bp::null,
                       bp::std_err > bp::null);
    const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (!child_.running()) {
        *error = "exited with status " + std::to_string(child_.exit_code());
        return false;
      }
      RedisConn c = connect(endpoint(), std::chrono::milliseconds(200));
      if (ping(c.get())) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    *error = "no PONG within 10 s (hung?) on port " + std::to_string(port_);
    return false;
  }

  void kill_child() {
    if (!child_.valid()) return;
    const pid_t pid = child_.id();
    std::error_code ignored;
    if (child_.running(ignored)) {
      // SIGKILL. Boost.Process 1.74's terminate() reaps with WNOHANG right after the kill, usually too early,
      // and wait() does nothing after terminate(): reap the child here (bounded), or it stays a zombie.
      child_.terminate(ignored);
      for (int i = 0; i < 500; ++i) {
        int status = 0;
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid || (r < 0 && errno == ECHILD)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
    child_ = boost::process::child();
  }

  std::vector<std::pair<std::string, std::string>> extra_env_;
  std::string dir_;
  int port_ = 0;
  boost::process::child child_;
};

}  // namespace testing_support
}  // namespace lockcheck
