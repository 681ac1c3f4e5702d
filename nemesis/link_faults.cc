#include "nemesis/link_faults.h"

namespace lockcheck {

void LinkFaults::cut(Network& c, const std::string& owner, const std::string& a, const std::string& b) {
  std::lock_guard<std::mutex> lock(mu_);
  const Pair p = pair(a, b);
  c.cut(p.first, p.second);
  cuts_[p].insert(owner);
}

void LinkFaults::cut_many(Network& c, const std::string& owner, const std::vector<Pair>& pairs) {
  std::lock_guard<std::mutex> lock(mu_);
  LinkPairs sorted;
  for (const auto& p : pairs) sorted.push_back(pair(p.first, p.second));
  for (const auto& p : sorted) cuts_[p].insert(owner);  // first: see the header
  c.cut_links(sorted);
}

std::vector<LinkFaults::Pair> LinkFaults::uncut_all(Network& c, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Pair> mine;
  LinkPairs heal;
  for (auto it = cuts_.begin(); it != cuts_.end();) {
    if (!it->second.erase(owner)) {
      ++it;
      continue;
    }
    mine.push_back(it->first);
    if (it->second.empty()) {
      heal.push_back(it->first);
      it = cuts_.erase(it);
    } else {
      ++it;
    }
  }
  std::string first_error;
  try {
    c.heal_links(heal);  // also clears the pairs' delays ...
  } catch (const std::exception& e) {
    first_error = e.what();
  }
  std::vector<LinkDelay> still;
  for (const auto& p : heal) {
    if (delays_.count(p) != 0) still.push_back(wanted_delay(p));  // ... which another nemesis may still want
  }
  try {
    if (!still.empty()) c.set_delays(still);
  } catch (const std::exception& e) {
    if (first_error.empty()) first_error = e.what();
  }
  if (!first_error.empty()) throw ClusterError(first_error);
  return mine;
}

void LinkFaults::delay(Network& c, const std::string& owner, const std::string& a, const std::string& b,
                       std::chrono::milliseconds delay, std::chrono::milliseconds jitter) {
  delay_many(c, owner, {Pair{a, b}}, delay, jitter);
}

void LinkFaults::delay_many(Network& c, const std::string& owner, const std::vector<Pair>& pairs,
                            std::chrono::milliseconds delay, std::chrono::milliseconds jitter) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LinkDelay> apply;
  for (const auto& x : pairs) {
    const Pair p = pair(x.first, x.second);
    delays_[p][owner] = Delay{delay, jitter, ++order_};
    apply.push_back(wanted_delay(p));
  }
  c.set_delays(apply);
}

std::vector<LinkFaults::Pair> LinkFaults::undelay_all(Network& c, const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Pair> mine;
  for (auto it = delays_.begin(); it != delays_.end();) {
    if (!it->second.erase(owner)) {
      ++it;
      continue;
    }
    mine.push_back(it->first);
    it = it->second.empty() ? delays_.erase(it) : std::next(it);
  }
  std::vector<LinkDelay> apply;
  for (const auto& p : mine) apply.push_back(wanted_delay(p));
  try {
    c.set_delays(apply);
  } catch (const std::exception& e) {
    throw ClusterError(e.what());
  }
  return mine;
}

LinkDelay LinkFaults::wanted_delay(const Pair& p) const {
  LinkDelay d{p.first, p.second, std::chrono::milliseconds(0), std::chrono::milliseconds(0)};
  auto it = delays_.find(p);
  if (it == delays_.end() || it->second.empty()) return d;
  const Delay* newest = nullptr;
  for (const auto& kv : it->second) {
    if (!newest || kv.second.order > newest->order) newest = &kv.second;
  }
  d.delay = newest->delay;
  d.jitter = newest->jitter;
  return d;
}

void LinkFaults::heal_all(Network& c) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  cuts_.clear();
  delays_.clear();
  try {
    c.heal_all();
  } catch (...) {
    // Nothing more to do: the cluster's stop() closes the proxy anyway.
  }
}

std::vector<LinkFaults::Pair> LinkFaults::cut_pairs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Pair> out;
  for (const auto& kv : cuts_) out.push_back(kv.first);
  return out;
}

}  // namespace lockcheck
