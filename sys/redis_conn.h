// A synchronous Redis connection with per-request timeouts and the error taxonomy lock clients need
// (after redis-plus-plus' errors.h): a reply error or a connection that could not be made means the command
// did not happen (fail); a timeout or a connection closed after the request was written means it may have
// happened (info). Built on hiredis 0.14's sync API (redisConnectWithTimeout + redisSetTimeout).
// Not thread-safe: one connection per client process.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"

struct redisContext;
struct redisReply;

namespace lockcheck {

// Redis facts the Redis locks and the redis server kind (servers/redis.cc) share.
// The name under which the Sentinels of Redis' replicated topology monitor the master (every backend uses it;
// Sentinel-aware lock clients ask for it).
inline constexpr char kSentinelMasterName[] = "lockcheck";

// Redis Cluster's hash slots: a key's slot is CRC16 (XMODEM) of the key, or of its hash tag (the part between
// the first '{' and the next '}', when not empty), modulo kClusterSlots.
inline constexpr int kClusterSlots = 16384;
inline int cluster_key_slot(const std::string& key) {
  std::string::size_type begin = 0, end = key.size();
  const auto open = key.find('{');
  if (open != std::string::npos) {
    const auto close = key.find('}', open + 1);
    if (close != std::string::npos && close > open + 1) begin = open + 1, end = close;
  }
  uint16_t crc = 0;
  for (auto i = begin; i < end; ++i) {
    crc ^= static_cast<uint16_t>(static_cast<unsigned char>(key[i]) << 8);
    for (int b = 0; b < 8; ++b)
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021) : static_cast<uint16_t>(crc << 1);
  }
  return crc % kClusterSlots;
}

enum class RedisStatus {
  kReply,    // a reply arrived (which may itself be an error reply: see Reply::is_error)
  kNotSent,  // could not connect or write: the command certainly did not reach the server
  kTimeout,  // no reply within the timeout: it may have been applied
  kClosed,   // the connection broke after the request was sent: it may have been applied
};

struct RedisReplyDeleter {
  void operator()(redisReply* r) const;
};

class Reply {
 public:
  RedisStatus status = RedisStatus::kNotSent;
  std::string error;  // transport error text for kNotSent/kTimeout/kClosed; the error reply's text otherwise

  bool ok() const { return status == RedisStatus::kReply && !is_error(); }
  // The command did not happen: not sent, or the server answered with an error.
  bool definitely_failed() const { return status == RedisStatus::kNotSent || is_error(); }
  // The outcome is unknown: timeout or closed after sending.
  bool indeterminate() const { return status == RedisStatus::kTimeout || status == RedisStatus::kClosed; }

  bool is_error() const;
  bool is_nil() const;
  bool is_status(const char* s) const;  // a status reply such as "OK"
  std::optional<long long> integer() const;
  std::optional<std::string> str() const;  // string or status reply
  const redisReply* raw() const { return reply_.get(); }

  std::unique_ptr<redisReply, RedisReplyDeleter> reply_;
};

class RedisConn {
 public:
  // Does not connect yet: the first command does (and a broken connection is re-made by the next command).
  RedisConn(Endpoint ep, std::chrono::milliseconds connect_timeout, std::chrono::milliseconds op_timeout);
  ~RedisConn();
  RedisConn(const RedisConn&) = delete;
  RedisConn& operator=(const RedisConn&) = delete;

  // Sends one command (binary-safe argv) and waits at most op_timeout for its reply.
  Reply command(const std::vector<std::string>& argv);
  // Drops the connection (the next command reconnects).
  void reset();
  const Endpoint& endpoint() const { return ep_; }
  // Changes the per-request timeout for later commands.
  void set_op_timeout(std::chrono::milliseconds t);

 private:
  bool ensure_connected(std::string* why);

  Endpoint ep_;
  std::chrono::milliseconds connect_timeout_;
  std::chrono::milliseconds op_timeout_;
  redisContext* ctx_ = nullptr;
};

// PINGs ep until it answers PONG or the deadline passes (each attempt bounded by 200 ms). True on PONG.
bool wait_for_ping(const Endpoint& ep, std::chrono::milliseconds deadline);
// One PING, connect and reply each bounded by timeout: "" on PONG, else what went wrong (the transport error,
// or the unexpected reply), for a message that says why a node is not ready.
std::string ping_error(const Endpoint& ep, std::chrono::milliseconds timeout);

// The compare-and-delete release script: deletes KEYS[1] only if its value is ARGV[1]; returns 1 or 0.
extern const char* const kCompareAndDeleteScript;
// The compare-and-pexpire extension script: sets PEXPIRE KEYS[1] ARGV[2] only if its value is ARGV[1].
extern const char* const kCompareAndPexpireScript;

}  // namespace lockcheck
