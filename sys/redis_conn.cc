#include "sys/redis_conn.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace lockcheck {

const char* const kCompareAndDeleteScript =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const char* const kCompareAndPexpireScript =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

void RedisReplyDeleter::operator()(redisReply* r) const {
  if (r) freeReplyObject(r);
}

bool Reply::is_error() const { return reply_ && reply_->type == REDIS_REPLY_ERROR; }
bool Reply::is_nil() const { return reply_ && reply_->type == REDIS_REPLY_NIL; }
bool Reply::is_status(const char* s) const {
  return reply_ && reply_->type == REDIS_REPLY_STATUS && std::strcmp(reply_->str, s) == 0;
}
std::optional<long long> Reply::integer() const {
  if (reply_ && reply_->type == REDIS_REPLY_INTEGER) return reply_->integer;
  return std::nullopt;
}
std::optional<std::string> Reply::str() const {
  if (reply_ && (reply_->type == REDIS_REPLY_STRING || reply_->type == REDIS_REPLY_STATUS)) {
    return std::string(reply_->str, reply_->len);
  }
  return std::nullopt;
}

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

}  // namespace

RedisConn::RedisConn(Endpoint ep, std::chrono::milliseconds connect_timeout, std::chrono::milliseconds op_timeout)
    : ep_(std::move(ep)), connect_timeout_(connect_timeout), op_timeout_(op_timeout) {}

RedisConn::~RedisConn() { reset(); }

void RedisConn::reset() {
  if (ctx_) redisFree(ctx_);
  ctx_ = nullptr;
}

void RedisConn::set_op_timeout(std::chrono::milliseconds t) {
  op_timeout_ = t;
  if (ctx_) redisSetTimeout(ctx_, to_timeval(op_timeout_));
}

bool RedisConn::ensure_connected(std::string* why) {
  if (ctx_) return true;
  redisContext* c = redisConnectWithTimeout(ep_.host.c_str(), ep_.port, to_timeval(connect_timeout_));
  if (c == nullptr) {
    *why = "connect " + ep_.str() + ": out of memory";
    return false;
  }
  if (c->err) {
    *why = "connect " + ep_.str() + ": " + c->errstr;
    redisFree(c);
    return false;
  }
  if (redisSetTimeout(c, to_timeval(op_timeout_)) != REDIS_OK) {
    *why = "connect " + ep_.str() + ": cannot set timeout";
    redisFree(c);
    return false;
  }
  ctx_ = c;
  return true;
}

Reply RedisConn::command(const std::vector<std::string>& argv) {
  Reply r;
  std::string why;
  if (!ensure_connected(&why)) {
    r.status = RedisStatus::kNotSent;
    r.error = why;
    return r;
  }
  std::vector<const char*> args;
  std::vector<size_t> lens;
  args.reserve(argv.size());
  lens.reserve(argv.size());
  for (const auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  // Append to hiredis' output buffer, then flush and read; a failure during the flush may have sent part of
  // the request, so from here on any transport error is indeterminate.
  if (redisAppendCommandArgv(ctx_, static_cast<int>(args.size()), args.data(), lens.data()) != REDIS_OK) {
    r.status = RedisStatus::kNotSent;
    r.error = std::string("cannot format command: ") + ctx_->errstr;
    reset();
    return r;
  }
  void* raw = nullptr;
  if (redisGetReply(ctx_, &raw) != REDIS_OK) {
    const bool timeout = ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
    r.status = timeout ? RedisStatus::kTimeout : RedisStatus::kClosed;
    r.error = (timeout ? "timeout after " + std::to_string(op_timeout_.count()) + " ms on " : "connection lost to ") +
              ep_.str() + (timeout ? "" : std::string(": ") + ctx_->errstr);
    reset();  // the reply may still arrive later; never read it as the answer to another command
    return r;
  }
  r.status = RedisStatus::kReply;
  r.reply_.reset(static_cast<redisReply*>(raw));
  if (r.is_error()) r.error = std::string(r.reply_->str, r.reply_->len);
  return r;
}

std::string ping_error(const Endpoint& ep, std::chrono::milliseconds timeout) {
  RedisConn c(ep, timeout, timeout);
  Reply r = c.command({"PING"});
  if (r.is_status("PONG")) return "";
  if (r.status != RedisStatus::kReply) return r.error.empty() ? "no reply" : r.error;
  const auto text = r.str();
  return "unexpected reply to PING" + (text ? ": " + *text : std::string());
}

bool wait_for_ping(const Endpoint& ep, std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  do {
    RedisConn c(ep, std::chrono::milliseconds(200), std::chrono::milliseconds(200));
    Reply r = c.command({"PING"});
    if (r.is_status("PONG")) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

}  // namespace lockcheck
