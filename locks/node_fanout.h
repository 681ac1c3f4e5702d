// Sends one command to each of N Redis nodes and gathers the replies: the engine under Redlock and its
// fencing rounds. One implementation, two strategies:
//   kParallel    writes every request at once, then waits for all replies, each bounded by its own timeout
//                (redsync, node-redlock, pottery);
//   kSequential  contacts node 0, waits for its reply or its timeout, then node 1, ... (both Ruby clients,
//                redis-plus-plus, redlock-py, redlock-cpp, Redisson's RedLock).
//
// Connections are persistent, one per node, made on first use and re-made after a timeout or transport error,
// driven by one libevent loop owned by this object through hiredis' async API: no thread per request. A
// parallel round on healthy connections costs one write and one read per node and (usually) one epoll_wait.
// hiredis 0.14 has no async timeouts, so the deadlines are this object's own timer.
//
// What each node's outcome means, in RedisConn's taxonomy (sys/redis_conn.h):
//   kReply    a reply arrived (it may be an error reply);
//   kNotSent  the request certainly did not run: the connection could not be made (refused, or not made
//             within connect_timeout), or the connection was found closed before the request was written;
//   kTimeout  no reply within op_timeout: it may have run. The connection is dropped, so a late reply is never
//             read as the answer to a later request;
//   kClosed   the connection broke after the request was written: it may have run.
// Per node, a request has connect_timeout to get a connection (when it needs a new one) and then op_timeout
// for its reply.
//
// Not thread-safe: one object per client process, used from one thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "sys/redis_conn.h"

struct event_base;
struct event;
struct redisAsyncContext;

namespace lockcheck {

enum class FanoutStrategy { kParallel, kSequential };
const char* to_string(FanoutStrategy s);  // "parallel", "sequential"

// One node's answer, copied out of hiredis (whose reply objects die with the callback).
struct NodeReply {
  enum class Kind { kNone, kStatus, kString, kInteger, kNil, kError, kOther };

  RedisStatus status = RedisStatus::kNotSent;
  Kind kind = Kind::kNone;  // kNone unless status == kReply
  std::string text;         // status, string or error reply text; the transport error otherwise
  long long integer = 0;    // for kInteger

  bool indeterminate() const { return status == RedisStatus::kTimeout || status == RedisStatus::kClosed; }
  // The command did not happen: not sent, or an error reply.
  bool definitely_failed() const { return status == RedisStatus::kNotSent || kind == Kind::kError; }
  bool is_status(const char* s) const { return kind == Kind::kStatus && text == s; }
  bool is_nil() const { return kind == Kind::kNil; }
  bool is_integer() const { return kind == Kind::kInteger; }
};

class NodeFanout {
 public:
  // Does not connect yet. REQUIRES: !nodes.empty().
  NodeFanout(std::vector<Endpoint> nodes, std::chrono::milliseconds connect_timeout,
             std::chrono::milliseconds op_timeout, FanoutStrategy strategy);
  ~NodeFanout();
  NodeFanout(const NodeFanout&) = delete;
  NodeFanout& operator=(const NodeFanout&) = delete;

  size_t size() const { return nodes_.size(); }
  FanoutStrategy strategy() const { return strategy_; }

  // Sends cmds[i] to node i and returns reply i for each (an empty cmds[i] skips node i: kNotSent "skipped").
  // Returns when every node has answered or timed out: at most connect_timeout + op_timeout after the start
  // (parallel), or the sum of those over the nodes (sequential). REQUIRES: cmds.size() == size().
  std::vector<NodeReply> run(const std::vector<std::vector<std::string>>& cmds);
  // The same command to every node.
  std::vector<NodeReply> run_all(const std::vector<std::string>& argv);

 private:
  struct Node;
  // hiredis callbacks (C linkage not needed: hiredis calls through function pointers).
  static void on_connect(const redisAsyncContext* ac, int status);
  static void on_disconnect(const redisAsyncContext* ac, int status);
  static void on_reply(redisAsyncContext* ac, void* reply, void* privdata);

  void notice_closed_connections();
  void start(Node& n, const std::vector<std::string>& argv);
  void flush(Node& n);
  void wait(const std::vector<Node*>& active);
  void drop(Node& n);

  std::vector<std::unique_ptr<Node>> nodes_;
  std::chrono::milliseconds connect_timeout_;
  std::chrono::milliseconds op_timeout_;
  FanoutStrategy strategy_;
  event_base* base_ = nullptr;
  event* timer_ = nullptr;
};

}  // namespace lockcheck
