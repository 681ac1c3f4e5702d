// Network faults of several nemeses on the same links, kept apart. Cluster::heal(a, b) clears both the cut
// and the delay of a pair, so a partition that heals must not remove a delay another nemesis still wants, and
// a delay that ends must not heal a cut. LinkFaults remembers who wants what on each unordered pair {a, b}
// and applies the union: a pair is cut while any owner cuts it; its delay is the last one set by an owner
// still delaying it.
// Thread-safety: all methods lock one mutex (the nemesis thread and teardown may both call them).
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"

namespace lockcheck {

class LinkFaults {
 public:
  using Pair = std::pair<std::string, std::string>;  // sorted: first < second

  // Cuts a<->b on behalf of owner (a nemesis name). Throws ClusterError from the cluster.
  void cut(Network& c, const std::string& owner, const std::string& a, const std::string& b);
  // Cuts every pair on behalf of owner as one fault (Network::cut_links: one bounded wait on the fault proxy).
  // The pairs are owner's even when the cluster threw (a proxy call that timed out may still be applied
  // later, so the heal must cover them). Throws ClusterError from the cluster, after trying every pair.
  void cut_many(Network& c, const std::string& owner, const std::vector<Pair>& pairs);
  // Drops every cut of owner; heals the pairs nobody else cuts (re-applying a delay still wanted there).
  // Returns the pairs owner had cut. The heals are one Network::heal_links. Throws ClusterError (after trying
  // every pair).
  std::vector<Pair> uncut_all(Network& c, const std::string& owner);

  // Delays a<->b on behalf of owner.
  void delay(Network& c, const std::string& owner, const std::string& a, const std::string& b,
             std::chrono::milliseconds delay, std::chrono::milliseconds jitter);
  // Delays every pair on behalf of owner as one fault (Network::set_delays: one bounded wait on the fault proxy);
  // the delays are owner's even when the cluster threw. Throws ClusterError after trying every pair.
  void delay_many(Network& c, const std::string& owner, const std::vector<Pair>& pairs, std::chrono::milliseconds delay,
                  std::chrono::milliseconds jitter);
  // Drops every delay of owner; a pair keeps another owner's delay if there is one. Returns owner's pairs. The
  // changes are one Network::set_delays.
  std::vector<Pair> undelay_all(Network& c, const std::string& owner);

  // Everything healed: Cluster::heal_all and no state left. Never throws.
  void heal_all(Network& c) noexcept;

  // Pairs cut now (by anyone), sorted.
  std::vector<Pair> cut_pairs() const;

  static Pair pair(const std::string& a, const std::string& b) { return a < b ? Pair{a, b} : Pair{b, a}; }

 private:
  struct Delay {
    std::chrono::milliseconds delay{0}, jitter{0};
    uint64_t order = 0;  // when it was set: the newest wins
  };
  // The delay pair p should have now: the newest of its owners', or none. REQUIRES: mu_ held.
  LinkDelay wanted_delay(const Pair& p) const;

  mutable std::mutex mu_;
  std::map<Pair, std::set<std::string>> cuts_;
  std::map<Pair, std::map<std::string, Delay>> delays_;
  uint64_t order_ = 0;
};

}  // namespace lockcheck
