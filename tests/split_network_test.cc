// SplitNetwork (cluster/split_network.h), the one party dispatch of the Docker and ssh backends: links between
// servers go to the backend's peer links, client links to the fault proxy, client <-> client to nothing.
#include "cluster/split_network.h"

#include <gtest/gtest.h>

#include <vector>

namespace lockcheck {
namespace {

using std::chrono::milliseconds;

class RecordingPeers : public PeerLinks {
 public:
  bool running = true;
  std::vector<std::string> calls;
  void require_running() const override {
    if (!running) throw ClusterError("test cluster: not running");
  }
  void cut_peers(const std::string& a, const std::string& b) override { calls.push_back("cut " + a + " " + b); }
  void heal_peers(const std::string& a, const std::string& b) override { calls.push_back("heal " + a + " " + b); }
  void heal_all_peers() override { calls.push_back("heal_all"); }
  void delay_peers(const std::string& a, const std::string& b, milliseconds d, milliseconds) override {
    calls.push_back("delay " + a + " " + b + " " + std::to_string(d.count()));
  }
};

TEST(SplitNetworkTest, ServerLinksGoToThePeersClientLinksToTheProxy) {
  FaultProxy proxy(1);
  RecordingPeers peers;
  SplitNetwork net("test cluster", 3, 2, 4, &peers);
  net.set_proxy(&proxy);
  net.cut("n1", "n2");
  net.cut("n3", "s2");
  net.heal("s1", "s2");
  net.set_delay("n1", "n3", milliseconds(40), milliseconds(0));
  EXPECT_EQ(peers.calls, (std::vector<std::string>{"cut n1 n2", "cut n3 s2", "heal s1 s2", "delay n1 n3 40"}));
  peers.calls.clear();
  net.cut("c0", "n1");  // the proxy's
  net.heal("n2", "c3");
  net.set_delay("c1", "n1", milliseconds(5), milliseconds(1));
  net.cut("c0", "c1");  // clients do not talk to each other
  net.cut("n2", "n2");  // a party and itself
  EXPECT_TRUE(peers.calls.empty());
  net.heal_all();
  EXPECT_EQ(peers.calls, (std::vector<std::string>{"heal_all"}));
}

TEST(SplitNetworkTest, UnknownPartiesAStoppedClusterAndProxyErrorsAreClusterErrors) {
  FaultProxy proxy(1);
  RecordingPeers peers;
  SplitNetwork net("test cluster", 3, 0, 2, &peers);
  net.set_proxy(&proxy);
  for (auto [a, b] :
       std::vector<std::pair<const char*, const char*>>{{"n4", "n1"}, {"c2", "n1"}, {"s1", "n1"}, {"x", "n1"}}) {
    try {
      net.cut(a, b);
      FAIL() << a << " " << b;
    } catch (const ClusterError& e) {
      EXPECT_NE(std::string(e.what()).find("unknown party"), std::string::npos) << e.what();
    }
  }
  try {
    net.set_delay("c0", "n1", milliseconds(-1), milliseconds(0));
    FAIL();
  } catch (const ClusterError& e) {
    EXPECT_NE(std::string(e.what()).find("test cluster: delay c0 n1: "), std::string::npos) << e.what();
  }
  peers.running = false;
  EXPECT_THROW(net.cut("n1", "n2"), ClusterError);
  EXPECT_THROW(net.heal_all(), ClusterError);
  EXPECT_TRUE(peers.calls.empty());
}

}  // namespace
}  // namespace lockcheck
