#include "cluster/fault_proxy.h"

#include <boost/asio.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

namespace lockcheck {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;
using ErrorCode = boost::system::error_code;

// Buffers gathered into one write (released chunks of one direction).
constexpr size_t kMaxBuffersPerWrite = 64;
// A connection's first read buffer, per direction (it grows to FaultProxyOptions::read_chunk_bytes).
constexpr size_t kFirstReadBytes = 2048;
// Pause before accepting again after accept() failed (e.g. out of file descriptors), so the loop cannot spin.
constexpr auto kAcceptRetryDelay = std::chrono::milliseconds(50);
// How long stop() lets outstanding operations finish (they are all cancelled) before it stops the loop.
constexpr auto kStopDrainTimeout = std::chrono::seconds(5);
// How often a link whose upstream is down tries to reach it (and to listen again once it answers).
constexpr auto kProbePeriod = std::chrono::milliseconds(50);
// The `from` of a shared link in the links map (not a valid party name: parties are node and client names).
const char* const kSharedFrom = "*";

using PartyPair = std::pair<std::string, std::string>;

void check_parties(const std::string& a, const std::string& b, const char* what) {
  if (a.empty() || b.empty()) throw std::invalid_argument(std::string("FaultProxy::") + what + ": empty party name");
  if (a == b)
    throw std::invalid_argument(std::string("FaultProxy::") + what + ": a link needs two parties, got '" + a +
                                "' twice");
}

PartyPair unordered(const std::string& a, const std::string& b) { return a < b ? PartyPair(a, b) : PartyPair(b, a); }

enum class LinkState { kOpen, kCut };

// The faults in force on one unordered pair of parties.
struct PairFault {
  LinkState state = LinkState::kOpen;
  std::chrono::microseconds delay{0};
  std::chrono::microseconds jitter{0};
};

struct Link;

// What connections share: options, the RNG, the connection budget. Touched only on the proxy thread.
struct Shared {
  Shared(const FaultProxyOptions& o, uint64_t seed) : options(o), rng(seed) {}
  FaultProxyOptions options;
  std::mt19937_64 rng;
  size_t open_connections = 0;
  PairFault no_fault;  // the faults of a connection to a shared link from an unnamed source: never any
  std::function<void(Link&)> upstream_refused;  // a connection's upstream refused: the link goes down
};

class Connection;

struct Link {
  Link(asio::io_context& io, std::string f, std::string t, tcp::endpoint up, PairFault* pf)
      : from(std::move(f)),
        to(std::move(t)),
        upstream(up),
        acceptor(io),
        accept_retry(io),
        probe_timer(io),
        probe(io),
        fault(pf) {}
  bool shared() const { return fault == nullptr; }
  std::string from;  // kSharedFrom for a shared link
  std::string to;
  tcp::endpoint upstream;
  tcp::acceptor acceptor;
  unsigned short port = 0;  // where acceptor listens (kept while the link is down, to listen there again)
  asio::steady_timer accept_retry;
  // Upstream down (it refused a connection, or upstream_down): the acceptor is closed, so that connecting is
  // refused, and probe tries upstream every kProbePeriod until it answers.
  bool down = false;
  asio::steady_timer probe_timer;
  tcp::socket probe;
  PairFault* fault;  // owned by Impl::faults_, stable; null for a shared link (each connection has its own)
  std::map<uint64_t, std::shared_ptr<Connection>> connections;  // open ones; a connection erases itself
  LinkStats counters;  // bytes_held and connections_open are computed by stats()
};

// One accepted connection and its upstream twin. Lives on the proxy thread only; kept alive by its link's map
// while open and by the handlers it has outstanding.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(Shared& shared, Link& link, PairFault& fault, uint64_t id, tcp::socket downstream)
      : shared_(shared),
        link_(link),
        fault_(fault),
        id_(id),
        downstream_(std::move(downstream)),
        upstream_(downstream_.get_executor()),
        up_(downstream_.get_executor(), shared.options.read_chunk_bytes),
        down_(downstream_.get_executor(), shared.options.read_chunk_bytes) {
    up_.source = &downstream_;
    up_.sink = &upstream_;
    up_.forwarded = &link_.counters.bytes_to_upstream;
    down_.source = &upstream_;
    down_.sink = &downstream_;
    down_.forwarded = &link_.counters.bytes_to_downstream;
  }

  void start() {
    ErrorCode ignored;
    downstream_.set_option(tcp::no_delay(true), ignored);
    read(Side::kUp);
    if (!cut()) connect_upstream();
  }

  // The pair's faults changed: connect if that was held back, and let held bytes flow if they may.
  void on_fault_changed() {
    if (life_ == Life::kClosed) return;
    if (upstream_state_ == UpstreamState::kNotConnected && !cut()) {
      if (up_.source_state == SourceState::kEnded && up_.queue.empty()) {
        close();  // the client came and went while the link was cut: nothing to deliver
        return;
      }
      connect_upstream();
    }
    pump(Side::kUp);
    pump(Side::kDown);
  }

  const PairFault* fault() const { return &fault_; }
  // Not (yet) connected upstream, and not held there by a cut: what the upstream going down resets.
  bool waiting_for_upstream() const { return upstream_state_ != UpstreamState::kConnected && !cut(); }

  // Closes with a reset (SO_LINGER 0), so that the client reads ECONNRESET as from a refusing node.
  void reset() {
    if (life_ == Life::kClosed) return;
    ErrorCode ignored;
    downstream_.set_option(asio::socket_base::linger(true, 0), ignored);
    close();
  }

  // Closes both sockets at once and drops held bytes. Idempotent.
  void close() {
    if (life_ == Life::kClosed) return;
    life_ = Life::kClosed;
    auto self = shared_from_this();  // the erase below may drop the last other reference
    ErrorCode ignored;
    downstream_.close(ignored);
    upstream_.close(ignored);
    up_.timer.cancel(ignored);
    down_.timer.cancel(ignored);
    --shared_.open_connections;
    link_.connections.erase(id_);
  }

  uint64_t held_bytes() const { return up_.held + down_.held; }

 private:
  enum class Side { kUp, kDown };  // kUp: from the accepted (downstream) socket to upstream
  enum class Life { kOpen, kClosed };
  enum class UpstreamState { kNotConnected, kConnecting, kConnected };
  enum class SourceState { kOpen, kEnded };  // kEnded: EOF or an error was read
  enum class SinkState { kOpen, kShutDown };

  struct Chunk {
    std::string bytes;
    SteadyClock::time_point release;
  };

  struct Direction {
    // The read buffer starts small and doubles, up to chunk_bytes, each time a read fills it: a lock client's
    // requests and answers are a few hundred bytes, and two 64 KiB buffers for each of a thousand connections
    // were 130 MB of heap churned by connection churn (heaptrack, a 50-client run with every nemesis).
    Direction(const tcp::socket::executor_type& ex, size_t chunk_bytes)
        : read_buf(std::min(chunk_bytes, kFirstReadBytes)), timer(ex) {}
    tcp::socket* source = nullptr;
    tcp::socket* sink = nullptr;
    uint64_t* forwarded = nullptr;
    std::deque<Chunk> queue;  // read, not yet written; release times non-decreasing
    uint64_t held = 0;        // bytes in queue
    std::vector<char> read_buf;
    bool reading = false;
    size_t chunks_in_write = 0;  // > 0 while a write is in flight
    bool timer_armed = false;
    SourceState source_state = SourceState::kOpen;
    SinkState sink_state = SinkState::kOpen;
    SteadyClock::time_point last_release{};
    SteadyClock::time_point end_release{};  // when the held EOF may be passed on
    asio::steady_timer timer;
  };

  Direction& dir(Side s) { return s == Side::kUp ? up_ : down_; }
  bool cut() const { return fault_.state == LinkState::kCut; }

  // When a chunk (or EOF) read now may leave: now + delay + jitter, but never before the one read before it.
  SteadyClock::time_point next_release(Direction& d) {
    SteadyClock::time_point t = SteadyClock::now();
    const PairFault& f = fault_;
    if (f.delay.count() > 0 || f.jitter.count() > 0) {
      std::chrono::microseconds extra = f.delay;
      if (f.jitter.count() > 0) {
        extra += std::chrono::microseconds(std::uniform_int_distribution<int64_t>(0, f.jitter.count())(shared_.rng));
      }
      t += extra;
    }
    if (t < d.last_release) t = d.last_release;
    d.last_release = t;
    return t;
  }

  void connect_upstream() {
    upstream_state_ = UpstreamState::kConnecting;
    auto self = shared_from_this();
    upstream_.async_connect(link_.upstream, [this, self](const ErrorCode& ec) {
      if (life_ == Life::kClosed) return;
      if (ec) {
        // As the node itself would: refused or unreachable. A refusal takes the whole link down, so that the
        // next clients are refused at connect (a definite failure) rather than accepted and closed.
        reset();
        if (ec == asio::error::connection_refused && shared_.upstream_refused) shared_.upstream_refused(link_);
        return;
      }
      upstream_state_ = UpstreamState::kConnected;
      ErrorCode ignored;
      upstream_.set_option(tcp::no_delay(true), ignored);
      read(Side::kDown);
      pump(Side::kUp);
    });
  }

  void read(Side s) {
    Direction& d = dir(s);
    if (life_ == Life::kClosed || d.reading || d.source_state == SourceState::kEnded) return;
    if (d.held >= shared_.options.max_held_bytes_per_direction) return;  // backpressure; resumed after a write
    if (s == Side::kDown && upstream_state_ != UpstreamState::kConnected) return;
    d.reading = true;
    auto self = shared_from_this();
    d.source->async_read_some(asio::buffer(d.read_buf.data(), d.read_buf.size()),
                              [this, self, s](const ErrorCode& ec, size_t n) { on_read(s, ec, n); });
  }

  void on_read(Side s, const ErrorCode& ec, size_t n) {
    Direction& d = dir(s);
    d.reading = false;
    if (life_ == Life::kClosed) return;
    if (n > 0) {
      d.queue.push_back(Chunk{std::string(d.read_buf.data(), n), next_release(d)});
      d.held += n;
      if (n == d.read_buf.size() && n < shared_.options.read_chunk_bytes) {
        d.read_buf.resize(std::min(shared_.options.read_chunk_bytes, 2 * n));
      }
    }
    if (ec) {
      // EOF, or a reset: pass it on as a close after what is held (and held itself while cut).
      d.source_state = SourceState::kEnded;
      d.end_release = next_release(d);
    }
    pump(s);
    read(s);
  }

  // Writes whatever may leave now; arms the timer for what may leave later; passes on a close when due.
  void pump(Side s) {
    Direction& d = dir(s);
    if (life_ == Life::kClosed || d.chunks_in_write > 0 || d.timer_armed || cut()) return;
    if (s == Side::kUp && upstream_state_ != UpstreamState::kConnected) return;
    if (d.sink_state == SinkState::kShutDown) return;
    const SteadyClock::time_point now = SteadyClock::now();
    if (!d.queue.empty()) {
      if (d.queue.front().release > now) {
        arm_timer(s, d.queue.front().release);
        return;
      }
      std::vector<asio::const_buffer> buffers;
      for (const Chunk& c : d.queue) {
        if (c.release > now || buffers.size() == kMaxBuffersPerWrite) break;
        buffers.push_back(asio::buffer(c.bytes));
      }
      d.chunks_in_write = buffers.size();
      auto self = shared_from_this();
      asio::async_write(*d.sink, buffers, [this, self, s](const ErrorCode& ec, size_t) { on_written(s, ec); });
      return;
    }
    if (d.source_state == SourceState::kEnded) {
      if (d.end_release > now) {
        arm_timer(s, d.end_release);
        return;
      }
      ErrorCode ignored;
      d.sink->shutdown(tcp::socket::shutdown_send, ignored);
      d.sink_state = SinkState::kShutDown;
      if (up_.sink_state == SinkState::kShutDown && down_.sink_state == SinkState::kShutDown) close();
    }
  }

  void on_written(Side s, const ErrorCode& ec) {
    Direction& d = dir(s);
    const size_t chunks = d.chunks_in_write;
    d.chunks_in_write = 0;
    if (life_ == Life::kClosed) return;
    if (ec) {
      close();  // the receiving side is gone
      return;
    }
    for (size_t i = 0; i < chunks; ++i) {
      const uint64_t n = d.queue.front().bytes.size();
      d.held -= n;
      *d.forwarded += n;
      d.queue.pop_front();
    }
    read(s);  // in case backpressure had stopped it
    pump(s);
  }

  void arm_timer(Side s, SteadyClock::time_point when) {
    Direction& d = dir(s);
    d.timer_armed = true;
    d.timer.expires_at(when);
    auto self = shared_from_this();
    d.timer.async_wait([this, self, s](const ErrorCode&) {
      dir(s).timer_armed = false;
      pump(s);  // a no-op once closed
    });
  }

  Shared& shared_;
  Link& link_;
  PairFault& fault_;  // the pair this connection belongs to (the link's, or its party's on a shared link)
  const uint64_t id_;
  tcp::socket downstream_;
  tcp::socket upstream_;
  Life life_ = Life::kOpen;
  UpstreamState upstream_state_ = UpstreamState::kNotConnected;
  Direction up_;
  Direction down_;
};

tcp::endpoint resolve_upstream(const Endpoint& upstream) {
  if (upstream.port <= 0 || upstream.port > 65535) {
    throw std::invalid_argument("FaultProxy::add_link: upstream port out of range: " + upstream.str());
  }
  ErrorCode ec;
  asio::ip::address address = asio::ip::make_address(upstream.host, ec);
  if (!ec) return tcp::endpoint(address, static_cast<unsigned short>(upstream.port));
  asio::io_context io;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(upstream.host, std::to_string(upstream.port), ec);
  if (ec || results.empty()) {
    throw FaultProxyError("FaultProxy::add_link: cannot resolve upstream " + upstream.str() + ": " + ec.message());
  }
  return results.begin()->endpoint();
}

}  // namespace

class FaultProxy::Impl {
 public:
  Impl(uint64_t seed, const FaultProxyOptions& options) : shared_(options, seed), work_(asio::make_work_guard(io_)) {
    shared_.upstream_refused = [this](Link& link) { go_down(link); };
    std::promise<void> done;
    loop_done_ = done.get_future();
    thread_ = std::thread([this, done = std::move(done)]() mutable {
      for (;;) {
        try {
          io_.run();
          break;
        } catch (const std::exception& e) {
          // A handler threw (out of memory, most likely); keep the proxy alive, say so.
          std::cerr << "fault proxy: unexpected error on the proxy thread: " << e.what() << "\n";
        }
      }
      done.set_value();
    });
  }

  ~Impl() { stop(); }

  Endpoint add_link(const std::string& from, const std::string& to, const Endpoint& upstream) {
    check_parties(from, to, "add_link");
    const tcp::endpoint up = resolve_upstream(upstream);
    return call([this, from, to, up] { return open_link(from, to, up, &fault(from, to)); });
  }

  Endpoint add_shared_link(const std::string& to, const Endpoint& upstream, const std::string& label) {
    const std::string from = kSharedFrom + label;
    check_parties(from, to, "add_shared_link");
    const tcp::endpoint up = resolve_upstream(upstream);
    return call([this, from, to, up] { return open_link(from, to, up, nullptr); });
  }

  void name_source(const std::string& address, const std::string& party) {
    ErrorCode ec;
    const asio::ip::address a = asio::ip::make_address(address, ec);
    if (ec) throw std::invalid_argument("FaultProxy::name_source: not an IP address: '" + address + "'");
    if (party.empty() || party == kSharedFrom) {
      throw std::invalid_argument("FaultProxy::name_source: bad party name '" + party + "'");
    }
    call([this, a, party] {
      sources_[a] = party;
      return 0;
    });
  }

  void set_source_classifier(std::function<std::string(const Endpoint&)> classify) {
    call([this, classify = std::move(classify)]() mutable {
      classifier_ = std::move(classify);
      return 0;
    });
  }

  void set_upstream(const std::string& from, const std::string& to, const Endpoint& upstream) {
    const tcp::endpoint up = resolve_upstream(upstream);
    call([this, from, to, up] {
      auto it = links_.find(PartyPair(from, to));
      if (it == links_.end()) throw std::invalid_argument("FaultProxy::set_upstream: no link " + from + "->" + to);
      it->second->upstream = up;
      return 0;
    });
  }

  void upstream_down(const Endpoint& upstream) {
    const tcp::endpoint up = resolve_upstream(upstream);
    call([this, up] {
      for (auto& entry : links_) {
        if (entry.second->upstream == up) go_down(*entry.second);
      }
      return 0;
    });
  }

  void upstream_up(const Endpoint& upstream) {
    const tcp::endpoint up = resolve_upstream(upstream);
    call([this, up] {
      for (auto& entry : links_) {
        if (entry.second->upstream == up && entry.second->down) listen_again(*entry.second);
      }
      return 0;
    });
  }

  void cut(const std::string& a, const std::string& b) { cut_many({{a, b}}); }
  void heal(const std::string& a, const std::string& b) { heal_many({{a, b}}); }

  // Many pairs in one call on the proxy thread: one wait, however many links (a partition of 50 clients' slots
  // cuts hundreds).
  void cut_many(const LinkPairs& pairs) {
    for (const auto& p : pairs) check_parties(p.first, p.second, "cut");
    call([this, pairs] {
      for (const auto& p : pairs) fault(p.first, p.second).state = LinkState::kCut;
      return 0;
    });
  }

  void heal_many(const LinkPairs& pairs) {
    for (const auto& p : pairs) check_parties(p.first, p.second, "heal");
    call([this, pairs] {
      for (const auto& p : pairs) {
        PairFault& f = fault(p.first, p.second);
        f = PairFault{};
        notify(&f);
      }
      return 0;
    });
  }

  void set_delays(const std::vector<LinkDelay>& delays) {
    for (const auto& d : delays) {
      check_parties(d.a, d.b, "set_delay");
      if (d.delay.count() < 0 || d.jitter.count() < 0) {
        throw std::invalid_argument("FaultProxy::set_delay: negative delay or jitter on " + d.a + "<->" + d.b);
      }
    }
    call([this, delays] {
      for (const auto& d : delays) {
        PairFault& f = fault(d.a, d.b);
        f.delay = d.delay;
        f.jitter = d.jitter;
      }
      return 0;  // applies to chunks read from now on; nothing to wake
    });
  }

  void heal_all() {
    call([this] {
      for (auto& entry : faults_) *entry.second = PairFault{};
      notify(nullptr);
      return 0;
    });
  }

  void set_delay(const std::string& a, const std::string& b, std::chrono::microseconds delay,
                 std::chrono::microseconds jitter) {
    check_parties(a, b, "set_delay");
    if (delay.count() < 0 || jitter.count() < 0) {
      throw std::invalid_argument("FaultProxy::set_delay: negative delay or jitter on " + a + "<->" + b);
    }
    call([this, a, b, delay, jitter] {
      PairFault& f = fault(a, b);
      f.delay = delay;
      f.jitter = jitter;
      return 0;  // applies to chunks read from now on; nothing to wake
    });
  }

  LinkStats stats(const std::string& from, const std::string& to) {
    return call([this, from, to] {
      auto it = links_.find(PartyPair(from.empty() ? kSharedFrom : from, to));
      if (it == links_.end()) throw std::invalid_argument("FaultProxy::stats: no link " + from + "->" + to);
      const Link& link = *it->second;
      LinkStats s = link.counters;
      s.connections_open = link.connections.size();
      s.bytes_held = 0;
      for (const auto& c : link.connections) s.bytes_held += c.second->held_bytes();
      return s;
    });
  }

  void stop() noexcept {
    std::lock_guard<std::mutex> lock(api_mu_);
    if (run_state_ == RunState::kStopped) return;
    run_state_ = RunState::kStopped;
    asio::post(io_, [this] { close_all(); });
    work_.reset();
    // Every socket, acceptor and timer is closed or cancelled, so run() returns once their handlers have run;
    // bound the wait anyway.
    if (loop_done_.wait_for(kStopDrainTimeout) != std::future_status::ready) io_.stop();
    thread_.join();
  }

 private:
  enum class RunState { kRunning, kStopped };

  // Runs fn on the proxy thread and returns its result (or rethrows its exception); after stop(), runs it
  // here (the thread is gone, so nothing races). fn must capture by value: after a timeout it may still run.
  template <typename F>
  auto call(F fn) -> decltype(fn()) {
    using R = decltype(fn());
    std::lock_guard<std::mutex> lock(api_mu_);
    if (run_state_ == RunState::kStopped) return fn();
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
    std::future<R> result = task->get_future();
    asio::post(io_, [task] { (*task)(); });
    if (result.wait_for(shared_.options.api_timeout_ms) != std::future_status::ready) {
      throw FaultProxyError("FaultProxy: the proxy thread did not answer within " +
                            std::to_string(shared_.options.api_timeout_ms.count()) + " ms");
    }
    return result.get();
  }

  // Opens a listener for a new link; fault is null for a shared link. Proxy thread.
  Endpoint open_link(const std::string& from, const std::string& to, const tcp::endpoint& up, PairFault* f) {
    if (run_state_ == RunState::kStopped) throw FaultProxyError("FaultProxy::add_link: the proxy is stopped");
    const PartyPair key(from, to);
    if (links_.count(key) != 0) {
      throw std::invalid_argument("FaultProxy::add_link: link " + from + "->" + to + " already exists");
    }
    auto link = std::make_unique<Link>(io_, from, to, up, f);
    ErrorCode ec;
    listen(*link, 0, ec);
    if (ec) throw FaultProxyError("FaultProxy::add_link " + from + "->" + to + ": cannot listen: " + ec.message());
    Link& ref = *link;
    links_.emplace(key, std::move(link));
    accept(ref);
    return Endpoint{"127.0.0.1", ref.port};
  }

  // Opens link's acceptor on 127.0.0.1:port (0: a free port, remembered in link.port). SO_REUSEADDR, so that
  // a link that went down can listen on its port again while old connections are in TIME_WAIT.
  static void listen(Link& link, unsigned short port, ErrorCode& ec) {
    const tcp::endpoint listen_at(asio::ip::address_v4::loopback(), port);
    link.acceptor.open(listen_at.protocol(), ec);
    if (!ec) link.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) link.acceptor.bind(listen_at, ec);
    if (!ec) link.acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) link.port = link.acceptor.local_endpoint(ec).port();
    if (ec) {
      ErrorCode ignored;
      link.acceptor.close(ignored);
    }
  }

  // The link's upstream is down: stop listening (connecting is refused; the kernel resets connections still
  // in the backlog), reset the connections still waiting for upstream, and probe until it answers.
  void go_down(Link& link) {
    if (link.down || run_state_ == RunState::kStopped) return;
    link.down = true;
    ErrorCode ignored;
    link.acceptor.close(ignored);
    link.accept_retry.cancel(ignored);
    std::vector<std::shared_ptr<Connection>> waiting;
    for (auto& c : link.connections) {
      if (c.second->waiting_for_upstream()) waiting.push_back(c.second);
    }
    for (auto& c : waiting) c->reset();
    probe(link);
  }

  void probe(Link& link) {
    link.probe_timer.expires_after(kProbePeriod);
    link.probe_timer.async_wait([this, &link](const ErrorCode& ec) {
      if (ec || !link.down || run_state_ == RunState::kStopped) return;
      ErrorCode ignored;
      link.probe.close(ignored);
      link.probe.async_connect(link.upstream, [this, &link](const ErrorCode& connect_ec) {
        ErrorCode ignored2;
        link.probe.close(ignored2);
        if (connect_ec == asio::error::operation_aborted || !link.down) return;
        if (!connect_ec) listen_again(link);
        if (link.down) probe(link);  // still refused, or the port could not be had again yet
      });
    });
  }

  // Listens on the link's port again (a port taken meanwhile: stays down, the probe retries).
  void listen_again(Link& link) {
    if (run_state_ == RunState::kStopped) return;
    ErrorCode ec;
    listen(link, link.port, ec);
    if (ec) return;
    link.down = false;
    ErrorCode ignored;
    link.probe_timer.cancel(ignored);
    accept(link);
  }

  PairFault& fault(const std::string& a, const std::string& b) {
    std::unique_ptr<PairFault>& f = faults_[unordered(a, b)];
    if (!f) f = std::make_unique<PairFault>();
    return *f;
  }

  // Wakes the connections of every link on pair (every link if pair is null).
  void notify(const PairFault* pair) {
    for (auto& entry : links_) {
      Link& link = *entry.second;
      if (pair != nullptr && !link.shared() && link.fault != pair) continue;
      std::vector<std::shared_ptr<Connection>> conns;  // a copy: on_fault_changed may close (and erase)
      for (auto& c : link.connections) {
        if (pair == nullptr || c.second->fault() == pair) conns.push_back(c.second);
      }
      for (auto& c : conns) c->on_fault_changed();
    }
  }

  void accept(Link& link) {
    link.acceptor.async_accept([this, &link](const ErrorCode& ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !link.acceptor.is_open()) return;
      if (ec) {
        link.accept_retry.expires_after(kAcceptRetryDelay);
        link.accept_retry.async_wait([this, &link](const ErrorCode& wait_ec) {
          if (!wait_ec && link.acceptor.is_open()) accept(link);
        });
        return;
      }
      ++link.counters.connections_accepted;
      if (shared_.open_connections >= shared_.options.max_connections) {
        ++link.counters.connections_rejected;
        ErrorCode ignored;
        socket.close(ignored);
      } else {
        const uint64_t id = next_connection_id_++;
        auto conn = std::make_shared<Connection>(shared_, link, fault_of(link, socket), id, std::move(socket));
        link.connections.emplace(id, conn);
        ++shared_.open_connections;
        conn->start();
      }
      accept(link);
    });
  }

  // The faults a connection accepted on link follows: the link's; on a shared link, those of the pair {party
  // named for the connection's source address, link.to}, or none for an unnamed source.
  PairFault& fault_of(Link& link, const tcp::socket& socket) {
    if (!link.shared()) return *link.fault;
    ErrorCode ec;
    const tcp::endpoint remote = socket.remote_endpoint(ec);
    if (ec) return shared_.no_fault;
    auto it = sources_.find(remote.address());
    std::string party;
    if (it != sources_.end()) {
      party = it->second;
    } else if (classifier_) {
      try {
        party = classifier_(Endpoint{remote.address().to_string(), remote.port()});
      } catch (...) {
        party.clear();  // the contract says it does not throw; an unknown source is never faulted
      }
    }
    if (party.empty() || party == link.to || party == kSharedFrom) return shared_.no_fault;
    return fault(party, link.to);
  }

  void close_all() {
    for (auto& entry : links_) {
      Link& link = *entry.second;
      ErrorCode ignored;
      link.acceptor.close(ignored);
      link.accept_retry.cancel(ignored);
      link.down = false;
      link.probe_timer.cancel(ignored);
      link.probe.close(ignored);
      std::vector<std::shared_ptr<Connection>> conns;
      for (auto& c : link.connections) conns.push_back(c.second);
      for (auto& c : conns) c->close();
    }
  }

  // Declared first, destroyed last: everything below deregisters from it.
  asio::io_context io_;
  Shared shared_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::mutex api_mu_;  // serialises the public methods; run_state_ is written under it
  // Atomic: the proxy thread's handlers read it too (go_down, probe), while stop() writes it (a data race TSan
  // found in FaultProxyNoServerTest).
  std::atomic<RunState> run_state_{RunState::kRunning};
  std::map<PartyPair, std::unique_ptr<PairFault>> faults_;  // by unordered pair; proxy thread
  std::map<PartyPair, std::unique_ptr<Link>> links_;        // by (from, to); proxy thread
  std::map<asio::ip::address, std::string> sources_;        // source address -> party (shared links); proxy thread
  std::function<std::string(const Endpoint&)> classifier_;  // for unnamed sources on shared links; proxy thread
  uint64_t next_connection_id_ = 0;
  std::future<void> loop_done_;
  std::thread thread_;
};

FaultProxy::FaultProxy(uint64_t seed, FaultProxyOptions options) : impl_(std::make_unique<Impl>(seed, options)) {}

FaultProxy::~FaultProxy() = default;

Endpoint FaultProxy::add_link(const std::string& from, const std::string& to, const Endpoint& upstream) {
  return impl_->add_link(from, to, upstream);
}
Endpoint FaultProxy::add_shared_link(const std::string& to, const Endpoint& upstream, const std::string& label) {
  return impl_->add_shared_link(to, upstream, label);
}
void FaultProxy::name_source(const std::string& address, const std::string& party) {
  impl_->name_source(address, party);
}
void FaultProxy::set_source_classifier(std::function<std::string(const Endpoint&)> classify) {
  impl_->set_source_classifier(std::move(classify));
}
void FaultProxy::set_upstream(const std::string& from, const std::string& to, const Endpoint& upstream) {
  impl_->set_upstream(from, to, upstream);
}
void FaultProxy::upstream_down(const Endpoint& upstream) { impl_->upstream_down(upstream); }
void FaultProxy::upstream_up(const Endpoint& upstream) { impl_->upstream_up(upstream); }
void FaultProxy::cut(const std::string& a, const std::string& b) { impl_->cut(a, b); }
void FaultProxy::heal(const std::string& a, const std::string& b) { impl_->heal(a, b); }
void FaultProxy::cut_many(const LinkPairs& pairs) { impl_->cut_many(pairs); }
void FaultProxy::heal_many(const LinkPairs& pairs) { impl_->heal_many(pairs); }
void FaultProxy::set_delays(const std::vector<LinkDelay>& delays) { impl_->set_delays(delays); }
void FaultProxy::heal_all() { impl_->heal_all(); }
void FaultProxy::set_delay(const std::string& a, const std::string& b, std::chrono::microseconds delay,
                           std::chrono::microseconds jitter) {
  impl_->set_delay(a, b, delay, jitter);
}
LinkStats FaultProxy::stats(const std::string& from, const std::string& to) const { return impl_->stats(from, to); }
void FaultProxy::stop() noexcept { impl_->stop(); }

}  // namespace lockcheck
