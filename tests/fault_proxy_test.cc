#include "cluster/fault_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "tests/support/redis_test_server.h"

namespace lockcheck {
namespace {

using namespace std::chrono_literals;
using testing_support::command;
using testing_support::connect;
using testing_support::ping;
using testing_support::RedisConn;
using testing_support::RedisTestServer;
using testing_support::Reply;

constexpr auto kShortTimeout = 300ms;  // "no answer" means none within this
constexpr auto kLongTimeout = 5000ms;

// Polls pred every 10 ms until it holds or limit passes; returns its last value.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

// Reads from fd until `expected` bytes arrived or `limit` passed; returns what arrived.
std::string read_raw(int fd, size_t expected, std::chrono::milliseconds limit) {
  std::string got;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (got.size() < expected) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[256];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// Number of clients the server reports (CLIENT LIST lines), asked over a direct connection.
int client_count(const Endpoint& server) {
  RedisConn c = connect(server, kLongTimeout);
  Reply r = command(c.get(), {"CLIENT", "LIST"});
  if (!r || r->type != REDIS_REPLY_STRING) return -1;
  const std::string list(r->str, r->len);
  int lines = 0;
  for (char ch : list) lines += ch == '\n';
  return lines - 1;  // minus the asking connection
}

bool connection_refused(const Endpoint& at) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(at.port));
  ::inet_pton(AF_INET, at.host.c_str(), &addr.sin_addr);
  const int r = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int err = errno;
  ::close(fd);
  return r != 0 && err == ECONNREFUSED;
}

class FaultProxyTest : public ::testing::Test {
 protected:
  RedisTestServer server_;
};

TEST_F(FaultProxyTest, PingGoesThroughALinkAndIsCounted) {
  FaultProxy proxy(1);
  const Endpoint at = proxy.add_link("c0", "n1", server_.endpoint());
  EXPECT_EQ(at.host, "127.0.0.1");
  EXPECT_NE(at.port, server_.endpoint().port);
  RedisConn c = connect(at, kLongTimeout);
  ASSERT_TRUE(ping(c.get()));
  // A write is counted when it completes, which may be just after the client got the reply.
  ASSERT_TRUE(eventually([&] { return proxy.stats("c0", "n1").bytes_held == 0; }, kLongTimeout));
  const LinkStats s = proxy.stats("c0", "n1");
  EXPECT_EQ(s.bytes_to_upstream, 14u);   // *1\r\n$4\r\nPING\r\n
  EXPECT_EQ(s.bytes_to_downstream, 7u);  // +PONG\r\n
  EXPECT_EQ(s.connections_accepted, 1u);
  EXPECT_EQ(s.connections_open, 1u);
}

TEST_F(FaultProxyTest, CutHoldsBytesOnThatLinkOnlyAndHealDeliversThem) {
  FaultProxy proxy(1);
  const Endpoint c0 = proxy.add_link("c0", "n1", server_.endpoint());
  const Endpoint c1 = proxy.add_link("c1", "n1", server_.endpoint());
  RedisConn old_conn = connect(c0, kShortTimeout);
  RedisConn other = connect(c1, kShortTimeout);
  ASSERT_TRUE(ping(old_conn.get()));

  proxy.cut("n1", "c0");  // the unordered pair: acts on the link added as c0 -> n1

  // No answer within the timeout; the connection is not refused or closed, the bytes are held.
  Reply r = command(old_conn.get(), {"PING"});
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(old_conn->err, REDIS_ERR_IO) << old_conn->errstr;
  EXPECT_EQ(proxy.stats("c0", "n1").bytes_held, 14u);
  // The other link to the same node still works.
  EXPECT_TRUE(ping(other.get()));
  // A new connection on the cut link is accepted, but gets no answer either.
  RedisConn during_cut = connect(c0, kShortTimeout);
  ASSERT_TRUE(during_cut && during_cut->err == 0) << (during_cut ? during_cut->errstr : "no context");
  EXPECT_FALSE(ping(during_cut.get()));

  proxy.heal("c0", "n1");

  RedisConn fresh = connect(c0, kShortTimeout);
  EXPECT_TRUE(ping(fresh.get()));
  // The held PINGs were delivered; their replies arrive on the old connections (hiredis gave up on them, so
  // read the sockets directly).
  EXPECT_EQ(read_raw(old_conn->fd, 7, kLongTimeout), "+PONG\r\n");
  EXPECT_EQ(read_raw(during_cut->fd, 7, kLongTimeout), "+PONG\r\n");
  EXPECT_TRUE(eventually([&] { return proxy.stats("c0", "n1").bytes_held == 0; }, kLongTimeout));
}

TEST_F(FaultProxyTest, CutBeforeTheLinkExistsAppliesToIt) {
  FaultProxy proxy(1);
  proxy.cut("c0", "n1");
  const Endpoint at = proxy.add_link("n1", "c0", server_.endpoint());  // either direction
  RedisConn c = connect(at, kShortTimeout);
  EXPECT_FALSE(ping(c.get()));
  proxy.heal_all();
  EXPECT_EQ(read_raw(c->fd, 7, kLongTimeout), "+PONG\r\n");
}

TEST_F(FaultProxyTest, DelayShowsInTheRoundTripAndCanBeRemoved) {
  FaultProxy proxy(1);
  const Endpoint at = proxy.add_link("c0", "n1", server_.endpoint());
  RedisConn c = connect(at, kLongTimeout);
  ASSERT_TRUE(ping(c.get()));

  proxy.set_delay("n1", "c0", 200ms, 0ms);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(ping(c.get()));
  auto rtt = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(rtt, 190ms);  // the request and the reply are each held 200 ms
  EXPECT_LT(rtt, 4000ms);

  proxy.set_delay("c0", "n1", 0ms, 0ms);
  t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(ping(c.get()));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 190ms);
}

TEST_F(FaultProxyTest, JitterKeepsTheOrderOfEachDirection) {
  FaultProxy proxy(7);
  const Endpoint at = proxy.add_link("c0", "n1", server_.endpoint());
  RedisConn c = connect(at, kLongTimeout);
  proxy.set_delay("c0", "n1", 1ms, 20ms);
  // One write per command, so that each travels as its own chunk with its own jitter.
  constexpr int kCommands = 50;
  for (int i = 0; i < kCommands; ++i) {
    ASSERT_EQ(redisAppendCommand(c.get(), "INCR counter"), REDIS_OK);
    int done = 0;
    while (!done) ASSERT_EQ(redisBufferWrite(c.get(), &done), REDIS_OK);
  }
  for (int i = 1; i <= kCommands; ++i) {
    void* raw = nullptr;
    ASSERT_EQ(redisGetReply(c.get(), &raw), REDIS_OK) << c->errstr;
    Reply r(static_cast<redisReply*>(raw));
    ASSERT_EQ(r->type, REDIS_REPLY_INTEGER);
    EXPECT_EQ(r->integer, i);
  }
}

TEST_F(FaultProxyTest, AClientsCloseIsHeldWhileCutAndPassedOnAfterHeal) {
  FaultProxy proxy(1);
  const Endpoint at = proxy.add_link("c0", "n1", server_.endpoint());
  RedisConn c = connect(at, kLongTimeout);
  ASSERT_TRUE(ping(c.get()));
  ASSERT_EQ(client_count(server_.endpoint()), 1);

  proxy.cut("c0", "n1");
  c.reset();  // the client closes its socket
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(client_count(server_.endpoint()), 1);  // the server has not seen the close
  EXPECT_EQ(proxy.stats("c0", "n1").connections_open, 1u);

  proxy.heal("c0", "n1");
  EXPECT_TRUE(eventually([&] { return client_count(server_.endpoint()) == 0; }, kLongTimeout));
  EXPECT_TRUE(eventually([&] { return proxy.stats("c0", "n1").connections_open == 0; }, kLongTimeout));
}

TEST_F(FaultProxyTest, TheServersCloseReachesTheClient) {
  FaultProxy proxy(1);
  const Endpoint at = proxy.add_link("c0", "n1", server_.endpoint());
  RedisConn c = connect(at, kLongTimeout);
  Reply ok = command(c.get(), {"QUIT"});
  ASSERT_TRUE(ok);
  EXPECT_EQ(std::string(ok->str, ok->len), "OK");
  Reply r = command(c.get(), {"PING"});
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(c->err, REDIS_ERR_EOF) << c->errstr;
  // The proxy passed the server's close on as a half-close; it lets go of the connection once the client
  // closes too, as every client does after EOF.
  c.reset();
  EXPECT_TRUE(eventually([&] { return proxy.stats("c0", "n1").connections_open == 0; }, kLongTimeout));
}

TEST(FaultProxyNoServerTest, AnUpstreamThatRefusesTakesTheLinkDownSoConnectingIsRefused) {
  FaultProxy proxy(1);
  const Endpoint nobody{"127.0.0.1", testing_support::pick_free_port()};
  const Endpoint at = proxy.add_link("c0", "n1", nobody);
  // The first connection is accepted (the proxy cannot know yet) and reset once upstream refuses. On loopback
  // that takes well under a millisecond, so the reset may already be there when hiredis checks the connect
  // (SO_ERROR): either the connect or the first command sees it.
  RedisConn c = connect(at, kLongTimeout);
  ASSERT_TRUE(c);
  if (c->err == 0) {
    Reply r = command(c.get(), {"PING"});
    EXPECT_EQ(r, nullptr);
  }
  EXPECT_TRUE(c->err == REDIS_ERR_EOF ||
              (c->err == REDIS_ERR_IO && std::string(c->errstr).find("reset") != std::string::npos))
      << c->err << " " << c->errstr;
  // From then on connecting is refused, as by the dead node itself: a definite failure for a client.
  EXPECT_TRUE(eventually([&] { return connection_refused(at); }, kLongTimeout));
  RedisConn later = connect(at, kLongTimeout);
  ASSERT_TRUE(later);
  EXPECT_NE(later->err, 0);
}

// A plain TCP listener on a given port (a stand-in for a node that dies and comes back on its port).
int listen_on(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 16) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(FaultProxyNoServerTest, ALinkWhoseUpstreamWentDownListensAgainWhenItIsBack) {
  FaultProxy proxy(1);
  const int port = testing_support::pick_free_port();
  int node = listen_on(port);
  ASSERT_GE(node, 0);
  const Endpoint upstream{"127.0.0.1", port};
  const Endpoint at = proxy.add_link("c0", "n1", upstream);
  EXPECT_FALSE(connection_refused(at));
  ::close(node);  // the node is killed; the cluster tells the proxy
  proxy.upstream_down(upstream);
  EXPECT_TRUE(connection_refused(at));
  node = listen_on(port);  // restarted on its port: the probe finds it
  ASSERT_GE(node, 0);
  EXPECT_TRUE(eventually([&] { return !connection_refused(at); }, kLongTimeout));
  ::close(node);
  proxy.upstream_down(upstream);
  EXPECT_TRUE(connection_refused(at));
  node = listen_on(port);
  ASSERT_GE(node, 0);
  proxy.upstream_up(upstream);  // at once
  EXPECT_FALSE(connection_refused(at));
  ::close(node);
}

// Sends an inline PING over a raw socket bound to source (127.x.y.z) and returns what came back within limit.
std::string ping_from(const std::string& source, const Endpoint& at, std::chrono::milliseconds limit) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in src{};
  src.sin_family = AF_INET;
  ::inet_pton(AF_INET, source.c_str(), &src.sin_addr);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(static_cast<uint16_t>(at.port));
  ::inet_pton(AF_INET, at.host.c_str(), &dst.sin_addr);
  std::string got;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src) == 0 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0 &&
      ::send(fd, "PING\r\n", 6, MSG_NOSIGNAL) == 6) {
    got = read_raw(fd, 7, limit);
  }
  ::close(fd);
  return got;
}

TEST_F(FaultProxyTest, ASharedLinkTellsPartiesApartByTheirSourceAddress) {
  FaultProxy proxy(1);
  proxy.name_source("127.0.1.2", "n2");
  proxy.name_source("127.0.2.1", "s1");
  const Endpoint at = proxy.add_shared_link("n1", server_.endpoint());
  EXPECT_EQ(ping_from("127.0.1.2", at, kLongTimeout), "+PONG\r\n");
  proxy.cut("n1", "n2");
  EXPECT_EQ(ping_from("127.0.1.2", at, kShortTimeout), "");          // n2 is cut from n1
  EXPECT_EQ(ping_from("127.0.2.1", at, kLongTimeout), "+PONG\r\n");  // s1 is not
  EXPECT_EQ(ping_from("127.0.0.1", at, kLongTimeout), "+PONG\r\n");  // an unnamed source never is
  proxy.cut("s1", "n1");
  EXPECT_EQ(ping_from("127.0.2.1", at, kShortTimeout), "");
  proxy.heal_all();
  EXPECT_EQ(ping_from("127.0.1.2", at, kLongTimeout), "+PONG\r\n");
  EXPECT_EQ(proxy.stats("*", "n1").connections_accepted, 6u);
}

TEST_F(FaultProxyTest, CutManyAndHealManyActOnEveryPairTogether) {
  FaultProxy proxy(1);
  const Endpoint c0 = proxy.add_link("c0", "n1", server_.endpoint());
  const Endpoint c1 = proxy.add_link("c1", "n1", server_.endpoint());
  const Endpoint c2 = proxy.add_link("c2", "n1", server_.endpoint());
  proxy.cut_many({{"c0", "n1"}, {"n1", "c1"}});
  RedisConn a = connect(c0, kShortTimeout), b = connect(c1, kShortTimeout), c = connect(c2, kShortTimeout);
  EXPECT_FALSE(ping(a.get()));
  EXPECT_FALSE(ping(b.get()));
  EXPECT_TRUE(ping(c.get()));  // not in the batch
  proxy.heal_many({{"c0", "n1"}, {"c1", "n1"}});
  EXPECT_EQ(read_raw(a->fd, 7, kLongTimeout), "+PONG\r\n");
  EXPECT_EQ(read_raw(b->fd, 7, kLongTimeout), "+PONG\r\n");
  // A bad pair refuses the whole batch before any of it is applied.
  EXPECT_THROW(proxy.cut_many({{"c0", "n1"}, {"c1", ""}}), std::invalid_argument);
  RedisConn d = connect(c0, kLongTimeout);
  EXPECT_TRUE(ping(d.get()));
  // Delays likewise: both links slow (only the lower bound is checked: a loaded machine may slow any ping).
  proxy.set_delays({{"c0", "n1", 150ms, 0ms}, {"n1", "c1", 150ms, 0ms}});
  auto round_trip = [](redisContext* ctx) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(ping(ctx));
    return std::chrono::steady_clock::now() - t0;
  };
  RedisConn e = connect(c1, kLongTimeout);
  EXPECT_GE(round_trip(d.get()), 150ms);
  EXPECT_GE(round_trip(e.get()), 150ms);
  proxy.set_delays({{"c0", "n1", 0ms, 0ms}, {"c1", "n1", 0ms, 0ms}});
  EXPECT_THROW(proxy.set_delays({{"c0", "n1", -1ms, 0ms}}), std::invalid_argument);
}

// A proxy thread that is behind (here: a classifier that takes 1.5 s at accept, standing in for a loaded machine)
// costs a batch one bounded wait, not one per pair: a partition of a 50-client run cut its ~150 links one call
// at a time, each waiting its full bound, and took 1,005 s. What timed out is still applied once the thread
// catches up.
TEST_F(FaultProxyTest, ABatchOnABusyProxyThreadWaitsOnceAndIsAppliedLater) {
  FaultProxyOptions options;
  options.api_timeout_ms = 200ms;
  FaultProxy proxy(1, options);
  std::atomic<bool> slow{true};
  proxy.set_source_classifier([&slow](const Endpoint&) {
    if (slow.exchange(false)) std::this_thread::sleep_for(1500ms);
    return std::string();
  });
  const Endpoint shared = proxy.add_shared_link("n1", server_.endpoint());
  const Endpoint c0 = proxy.add_link("c0", "n1", server_.endpoint());
  std::thread busy([&] { ping_from("127.0.0.1", shared, kLongTimeout); });  // holds the proxy thread 1.5 s
  ASSERT_TRUE(eventually([&] { return !slow.load(); }, kLongTimeout));
  LinkPairs pairs;
  for (int i = 0; i < 100; ++i) pairs.emplace_back("c" + std::to_string(i), "n1");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(proxy.cut_many(pairs), FaultProxyError);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_LT(waited, 1000ms) << "100 pairs waited " << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms";
  busy.join();
  RedisConn c = connect(c0, kShortTimeout);
  EXPECT_FALSE(ping(c.get()));  // the batch was applied after the thread came back
  proxy.heal_all();
  EXPECT_EQ(read_raw(c->fd, 7, kLongTimeout), "+PONG\r\n");
}

TEST_F(FaultProxyTest, ConnectionsBeyondTheLimitAreClosed) {
  FaultProxyOptions options;
  options.max_connections = 1;
  FaultProxy proxy(1, options);
  const Endpoint at = proxy.add_link("c0", "n1", server_.endpoint());
  RedisConn first = connect(at, kLongTimeout);
  ASSERT_TRUE(ping(first.get()));
  RedisConn second = connect(at, kLongTimeout);
  EXPECT_FALSE(ping(second.get()));
  EXPECT_TRUE(ping(first.get()));
  const LinkStats s = proxy.stats("c0", "n1");
  EXPECT_EQ(s.connections_accepted, 2u);
  EXPECT_EQ(s.connections_rejected, 1u);
}

TEST_F(FaultProxyTest, HeldBytesAreBoundedWhileCut) {
  FaultProxyOptions options;
  options.max_held_bytes_per_direction = 64 * 1024;
  options.read_chunk_bytes = 16 * 1024;
  FaultProxy proxy(1, options);
  const Endpoint at = proxy.add_link("c0", "n1", server_.endpoint());
  proxy.cut("c0", "n1");
  RedisConn c = connect(at, kLongTimeout);
  ASSERT_TRUE(c && c->err == 0);
  // Write inline PINGs without reading until the socket stays full for 200 ms (bounded at 256 MiB).
  ASSERT_EQ(::fcntl(c->fd, F_SETFL, ::fcntl(c->fd, F_GETFL) | O_NONBLOCK), 0);
  const std::string pings = [] {
    std::string s;
    for (int i = 0; i < 1024; ++i) s += "PING\r\n";
    return s;
  }();
  size_t written = 0;
  while (written < (size_t{256} << 20)) {
    const ssize_t n = ::send(c->fd, pings.data(), pings.size(), MSG_NOSIGNAL);
    if (n > 0) {
      written += static_cast<size_t>(n);
      continue;
    }
    ASSERT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << std::strerror(errno);
    pollfd p{c->fd, POLLOUT, 0};
    if (::poll(&p, 1, 200) == 0) break;  // the proxy stopped reading: backpressure
  }
  EXPECT_LT(written, size_t{256} << 20);
  const LinkStats s = proxy.stats("c0", "n1");
  EXPECT_GE(s.bytes_held, options.max_held_bytes_per_direction);
  EXPECT_LE(s.bytes_held, options.max_held_bytes_per_direction + options.read_chunk_bytes);
  EXPECT_EQ(s.bytes_to_upstream, 0u);
}

TEST_F(FaultProxyTest, StopClosesEveryListenerAndIsIdempotent) {
  FaultProxy proxy(1);
  const Endpoint at = proxy.add_link("c0", "n1", server_.endpoint());
  RedisConn c = connect(at, kLongTimeout);
  ASSERT_TRUE(ping(c.get()));
  proxy.stop();
  EXPECT_TRUE(connection_refused(at));
  EXPECT_FALSE(ping(c.get()));  // the proxied connection is closed too
  proxy.stop();
  EXPECT_THROW(proxy.add_link("c1", "n1", server_.endpoint()), FaultProxyError);
  EXPECT_NO_THROW(proxy.heal_all());
  EXPECT_EQ(proxy.stats("c0", "n1").connections_open, 0u);
}

TEST(FaultProxyInputTest, BadArgumentsAreRejectedWithAMessage) {
  FaultProxy proxy(1);
  const Endpoint somewhere{"127.0.0.1", 6379};
  EXPECT_THROW(proxy.add_link("", "n1", somewhere), std::invalid_argument);
  EXPECT_THROW(proxy.add_link("n1", "n1", somewhere), std::invalid_argument);
  EXPECT_THROW(proxy.add_link("c0", "n1", Endpoint{"127.0.0.1", 0}), std::invalid_argument);
  proxy.add_link("c0", "n1", somewhere);
  EXPECT_THROW(proxy.add_link("c0", "n1", somewhere), std::invalid_argument);
  EXPECT_NO_THROW(proxy.add_link("n1", "c0", somewhere));  // the other direction is another link
  EXPECT_THROW(proxy.cut("c0", ""), std::invalid_argument);
  EXPECT_THROW(proxy.set_delay("c0", "n1", -1ms, 0ms), std::invalid_argument);
  EXPECT_THROW(proxy.stats("c9", "n1"), std::invalid_argument);
}

}  // namespace
}  // namespace lockcheck
