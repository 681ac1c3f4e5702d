#include "locks/node_fanout.h"

#include <event2/event.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

#include "sys/process.h"

namespace lockcheck {

const char* to_string(FanoutStrategy s) {
  switch (s) {
    case FanoutStrategy::kParallel: return "parallel";
    case FanoutStrategy::kSequential: return "sequential";
  }
  return "parallel";
}

using Clock = std::chrono::steady_clock;

// One node: its connection and the request in flight (at most one).
struct NodeFanout::Node {
  Endpoint ep;
  std::chrono::milliseconds op_timeout{0};
  redisAsyncContext* ac = nullptr;  // null when there is no connection
  bool connected = false;           // the TCP connection is established (hiredis saw the first write event)
  std::string connect_error;        // why the last connect failed
  bool pending = false;             // a request waits for its reply
  Clock::time_point connect_deadline;
  Clock::time_point reply_deadline;
  NodeReply reply;

  void finish(RedisStatus status, std::string why) {
    pending = false;
    reply = NodeReply{};
    reply.status = status;
    reply.text = std::move(why);
  }
};

namespace {

NodeReply copy_reply(const redisReply* r) {
  NodeReply out;
  out.status = RedisStatus::kReply;
  switch (r->type) {
    case REDIS_REPLY_STATUS:
      out.kind = NodeReply::Kind::kStatus;
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STRING:
      out.kind = NodeReply::Kind::kString;
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.kind = NodeReply::Kind::kError;
      out.text.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.kind = NodeReply::Kind::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_NIL: out.kind = NodeReply::Kind::kNil; break;
    default: out.kind = NodeReply::Kind::kOther; break;
  }
  return out;
}

timeval to_timeval(Clock::duration d) {
  if (d < Clock::duration::zero()) d = Clock::duration::zero();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  timeval tv;
  tv.tv_sec = static_cast<time_t>(us / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(us % 1000000);
  return tv;
}

void on_timer(evutil_socket_t, short, void*) {}  // only wakes the loop

// hiredis' event hooks on libevent. Like hiredis' own adapter (hiredis/adapters/libevent.h), with two changes
// that keep epoll_ctl off the path of a request on a healthy connection:
//  - the read event is persistent: the stock adapter's one-shot read event is deleted by libevent after every
//    reply and re-added by hiredis, one epoll_ctl per reply (measured with strace: a third of the client's system
//    calls);
//  - the write event is armed lazily: hiredis asks for it when it queues a request (addWrite) and gives it up when
//    the write is done (delWrite). Asking only records the wish; arm_write (from NodeFanout::wait) adds the event just
//    before the loop waits, so a request that flush() writes at once never touches epoll. A partial write, or a
//    connection still being made, keeps the wish and gets the event.
// Every epoll_ctl happens when libevent is asked (no EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST): hiredis runs the
// cleanup hook and then closes the socket, so the events must leave epoll before the close. With the change list
// their EPOLL_CTL_DEL was deferred to the loop's next turn and hit a closed descriptor (EBADF), or one that another
// thread, or this loop's next connection, had been given meanwhile (ThreadSanitizer's report on NodeFanout::run).
struct LoopHooks {
  redisAsyncContext* ac;
  event* rev;
  event* wev;
  bool want_write;  // hiredis has output to write (or is connecting): the write event is wanted
};

//
// errno is cleared before each hand-over: hiredis 0.14's redisCheckSocketError falls back to errno when SO_ERROR
// is 0, so a stale EINPROGRESS (left by the connect(2) of another node's new connection) makes it treat an
// established socket as "still connecting" and return without reading. With a persistent read event on a socket
// that already has an EOF (its node was killed), that was a busy loop: the fan-out hang under kill and restart.
void hook_read_ready(evutil_socket_t, short, void* arg) {
  errno = 0;
  redisAsyncHandleRead(static_cast<LoopHooks*>(arg)->ac);
}
void hook_write_ready(evutil_socket_t, short, void* arg) {
  errno = 0;
  redisAsyncHandleWrite(static_cast<LoopHooks*>(arg)->ac);
}
void hook_add_read(void* p) {
  auto* h = static_cast<LoopHooks*>(p);
  if (!event_pending(h->rev, EV_READ, nullptr)) event_add(h->rev, nullptr);
}
void hook_del_read(void* p) { event_del(static_cast<LoopHooks*>(p)->rev); }
void hook_add_write(void* p) { static_cast<LoopHooks*>(p)->want_write = true; }
void hook_del_write(void* p) {
  auto* h = static_cast<LoopHooks*>(p);
  h->want_write = false;
  if (event_pending(h->wev, EV_WRITE, nullptr)) event_del(h->wev);
}
void hook_cleanup(void* p) {
  auto* h = static_cast<LoopHooks*>(p);
  event_free(h->rev);  // deletes the event from epoll now, while the socket is still open
  event_free(h->wev);
  delete h;
}
// Adds the write event of a connection that wants it and does not have it.
void arm_write(redisAsyncContext* ac) {
  auto* h = ac != nullptr ? static_cast<LoopHooks*>(ac->ev.data) : nullptr;
  if (h != nullptr && h->want_write && !event_pending(h->wev, EV_WRITE, nullptr)) event_add(h->wev, nullptr);
}

// Attaches ac to base. False when libevent cannot make the events.
bool attach(redisAsyncContext* ac, event_base* base) {
  if (ac->ev.data != nullptr) return false;
  auto* h = new LoopHooks{ac, nullptr, nullptr, true};
  h->rev = event_new(base, ac->c.fd, EV_READ | EV_PERSIST, hook_read_ready, h);
  h->wev = event_new(base, ac->c.fd, EV_WRITE, hook_write_ready, h);
  if (h->rev == nullptr || h->wev == nullptr) {
    if (h->rev) event_free(h->rev);
    if (h->wev) event_free(h->wev);
    delete h;
    return false;
  }
  ac->ev.addRead = hook_add_read;
  ac->ev.delRead = hook_del_read;
  ac->ev.addWrite = hook_add_write;
  ac->ev.delWrite = hook_del_write;
  ac->ev.cleanup = hook_cleanup;
  ac->ev.data = h;
  event_add(h->rev, nullptr);
  event_add(h->wev, nullptr);  // the first write event tells hiredis the connection is established
  return true;
}

}  // namespace

void NodeFanout::on_connect(const redisAsyncContext* ac, int status) {
  auto* n = static_cast<Node*>(ac->data);
  if (n == nullptr) return;
  if (status != REDIS_OK) {
    // hiredis frees the context after this callback, then fails the queued request with a null reply.
    n->ac = nullptr;
    n->connected = false;
    n->connect_error = ac->errstr ? ac->errstr : "connect failed";
    return;
  }
  n->connected = true;
  n->reply_deadline = Clock::now() + n->op_timeout;
}

void NodeFanout::on_disconnect(const redisAsyncContext* ac, int) {
  auto* n = static_cast<Node*>(ac->data);
  if (n == nullptr) return;
  // hiredis frees the context after this callback (the queued request was already failed with a null reply).
  n->ac = nullptr;
  n->connected = false;
}

void NodeFanout::on_reply(redisAsyncContext* ac, void* reply, void* privdata) {
  auto* n = static_cast<Node*>(privdata);
  if (n == nullptr || !n->pending) return;  // a request we gave up on (its connection is being dropped)
  if (reply == nullptr) {
    // The connection went away with the request queued: after it was established the request may have been
    // written (closed), before that it cannot have been (not sent).
    if (n->connected) {
      n->finish(RedisStatus::kClosed,
                "connection lost to " + n->ep.str() + (ac->errstr ? std::string(": ") + ac->errstr : ""));
    } else {
      const std::string why = !n->connect_error.empty() ? n->connect_error : (ac->errstr ? ac->errstr : "failed");
      n->finish(RedisStatus::kNotSent, "connect " + n->ep.str() + ": " + why);
    }
    return;
  }
  n->reply = copy_reply(static_cast<redisReply*>(reply));
  n->pending = false;
}

NodeFanout::NodeFanout(std::vector<Endpoint> nodes, std::chrono::milliseconds connect_timeout,
                       std::chrono::milliseconds op_timeout, FanoutStrategy strategy)
    : connect_timeout_(connect_timeout), op_timeout_(op_timeout), strategy_(strategy) {
  if (nodes.empty()) throw std::invalid_argument("NodeFanout: no nodes");
  ignore_sigpipe();  // hiredis writes with write(2); a node killed mid-round must not kill the harness
  for (auto& ep : nodes) {
    auto n = std::make_unique<Node>();
    n->ep = std::move(ep);
    n->op_timeout = op_timeout;
    nodes_.push_back(std::move(n));
  }
  event_config* cfg = event_config_new();
  if (cfg == nullptr) throw std::runtime_error("NodeFanout: event_config_new failed");
  // One thread only. No EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST: see LoopHooks.
  event_config_set_flag(cfg, EVENT_BASE_FLAG_NOLOCK);
  base_ = event_base_new_with_config(cfg);
  event_config_free(cfg);
  if (base_ == nullptr) throw std::runtime_error("NodeFanout: event_base_new failed");
  timer_ = evtimer_new(base_, on_timer, nullptr);
  if (timer_ == nullptr) {
    event_base_free(base_);
    throw std::runtime_error("NodeFanout: evtimer_new failed");
  }
}

NodeFanout::~NodeFanout() {
  for (auto& n : nodes_) drop(*n);
  if (timer_) event_free(timer_);
  if (base_) event_base_free(base_);
}

void NodeFanout::drop(Node& n) {
  n.pending = false;  // callbacks run by redisAsyncFree are ignored
  n.connected = false;
  if (n.ac != nullptr) {
    redisAsyncContext* ac = n.ac;
    n.ac = nullptr;
    ac->data = nullptr;
    redisAsyncFree(ac);
  }
}

void NodeFanout::start(Node& n, const std::vector<std::string>& argv) {
  if (n.ac != nullptr && !n.connected) drop(n);
  const auto now = Clock::now();
  n.reply = NodeReply{};
  n.pending = true;
  if (n.ac == nullptr) {
    n.connect_error.clear();
    redisAsyncContext* ac = redisAsyncConnect(n.ep.host.c_str(), n.ep.port);
    if (ac == nullptr) {
      n.finish(RedisStatus::kNotSent, "connect " + n.ep.str() + ": out of memory");
      return;
    }
    if (ac->err) {
      n.finish(RedisStatus::kNotSent, "connect " + n.ep.str() + ": " + (ac->errstr ? ac->errstr : "failed"));
      redisAsyncFree(ac);
      return;
    }
    ac->data = &n;
    if (!attach(ac, base_)) {
      ac->data = nullptr;
      redisAsyncFree(ac);
      n.finish(RedisStatus::kNotSent, "connect " + n.ep.str() + ": cannot attach to the event loop");
      return;
    }
    redisAsyncSetConnectCallback(ac, &NodeFanout::on_connect);
    redisAsyncSetDisconnectCallback(ac, &NodeFanout::on_disconnect);
    n.ac = ac;
    n.connected = false;
    n.connect_deadline = now + connect_timeout_;
  } else {
    n.reply_deadline = now + op_timeout_;
  }
  std::vector<const char*> args;
  std::vector<size_t> lens;
  args.reserve(argv.size());
  lens.reserve(argv.size());
  for (const auto& a : argv) {
    args.push_back(a.data());
    lens.push_back(a.size());
  }
  if (redisAsyncCommandArgv(n.ac, &NodeFanout::on_reply, &n, static_cast<int>(args.size()), args.data(), lens.data()) !=
      REDIS_OK) {
    const std::string why = n.ac->errstr ? n.ac->errstr : "cannot queue the command";
    drop(n);
    n.finish(RedisStatus::kNotSent, n.ep.str() + ": " + why);
  }
}

void NodeFanout::flush(Node& n) {
  // Write now rather than on the loop's next turn (the write event stays registered, so a partial write still
  // completes in the loop). May fail the request and free the context through the callbacks.
  if (n.pending && n.ac != nullptr && n.connected) redisAsyncHandleWrite(n.ac);
}

void NodeFanout::wait(const std::vector<Node*>& active) {
  for (;;) {
    const auto now = Clock::now();
    bool any = false;
    Clock::time_point next = Clock::time_point::max();
    for (Node* n : active) {
      if (!n->pending) continue;
      if (n->ac == nullptr) {  // cannot happen (hiredis fails the request when it frees the context); be safe
        n->finish(RedisStatus::kNotSent, "connection to " + n->ep.str() + " gone before the request was sent");
        continue;
      }
      if (!n->connected && now >= n->connect_deadline) {
        drop(*n);
        n->finish(RedisStatus::kNotSent, "connect " + n->ep.str() + ": no connection within " +
                                             std::to_string(connect_timeout_.count()) + " ms");
        continue;
      }
      if (n->connected && now >= n->reply_deadline) {
        drop(*n);
        n->finish(RedisStatus::kTimeout,
                  "timeout after " + std::to_string(op_timeout_.count()) + " ms on " + n->ep.str());
        continue;
      }
      any = true;
      next = std::min(next, n->connected ? n->reply_deadline : n->connect_deadline);
    }
    if (!any) break;
    for (Node* n : active) arm_write(n->ac);
    timeval tv = to_timeval(next - now);
    evtimer_add(timer_, &tv);
    event_base_loop(base_, EVLOOP_ONCE);
  }
  evtimer_del(timer_);
}

void NodeFanout::notice_closed_connections() {
  // One non-blocking turn of the loop: hiredis reads the EOF of every connection whose node died (or restarted)
  // since the last round and drops it (on_disconnect). Its request then gets a fresh connection: refused means
  // kNotSent, not kClosed after a write into a dead socket. (Idle connections have no request queued, so no
  // reply can be read here.) EVLOOP_ONCE bounds it to one pass: with EVLOOP_NONBLOCK alone libevent keeps
  // looping while any event stays active, and a readable socket whose handler makes no progress would spin.
  event_base_loop(base_, EVLOOP_NONBLOCK | EVLOOP_ONCE);
  // A connection still being made when its last round ended (it timed out connecting, or the round gave up on
  // it) is not trusted for the next request: dropped, so the next request starts a fresh connect.
  for (auto& n : nodes_) {
    if (n->ac != nullptr && !n->connected && !n->pending) drop(*n);
  }
}

std::vector<NodeReply> NodeFanout::run(const std::vector<std::vector<std::string>>& cmds) {
  if (cmds.size() != nodes_.size()) throw std::invalid_argument("NodeFanout::run: one command per node");
  std::vector<NodeReply> out(nodes_.size());
  notice_closed_connections();
  if (strategy_ == FanoutStrategy::kParallel) {
    std::vector<Node*> active;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (cmds[i].empty()) continue;
      start(*nodes_[i], cmds[i]);
      active.push_back(nodes_[i].get());
    }
    for (Node* n : active) flush(*n);
    wait(active);
  } else {
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (cmds[i].empty()) continue;
      if (i > 0) notice_closed_connections();
      start(*nodes_[i], cmds[i]);
      flush(*nodes_[i]);
      wait({nodes_[i].get()});
    }
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (cmds[i].empty()) {
      out[i].status = RedisStatus::kNotSent;
      out[i].text = "skipped";
    } else {
      out[i] = nodes_[i]->reply;
    }
  }
  return out;
}

std::vector<NodeReply> NodeFanout::run_all(const std::vector<std::string>& argv) {
  return run(std::vector<std::vector<std::string>>(nodes_.size(), argv));
}

}  // namespace lockcheck
