#include "cluster/peer_network.h"

namespace lockcheck {

void PeerNetwork::cut_many(const LinkPairs& pairs) {
  each_link(pairs, [this](const auto& p) { cut(p.first, p.second); });
}

void PeerNetwork::heal_many(const LinkPairs& pairs) {
  each_link(pairs, [this](const auto& p) { heal(p.first, p.second); });
}

void PeerNetwork::delays(const std::vector<LinkDelay>& delays) {
  each_link(delays, [this](const LinkDelay& d) { delay(d.a, d.b, d.delay, d.jitter); });
}

}  // namespace lockcheck
