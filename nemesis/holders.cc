#include "nemesis/holders.h"

#include <algorithm>

#include "core/party.h"

namespace lockcheck {

namespace {
const char* const kHowReported = "keys reported by the client";
const char* const kHowRequestKey = "the request's key";
}  // namespace

std::shared_ptr<HolderTracker> HolderTracker::attach(HistoryWriter& history) {
  auto t = std::make_shared<HolderTracker>();
  history.observe([t](const Op& op) { t->on_op(op); });
  return t;
}

void HolderTracker::on_op(const Op& op) {
  if (!op.is_client() || op.is_notice()) return;  // a loss notice neither ends a holding nor retires anyone
  std::vector<std::function<void()>> due;  // on_release actions of the holdings this op ends
  std::vector<uint64_t> due_serials;
  bool changed = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto of_op = [&](bool any_key) {
      return [&op, any_key](const Holding& h) { return h.process == op.process && (any_key || h.key == op.key); };
    };
    // Ends the holdings of v that match: their actions become due (running_ keeps them in force until those
    // return).
    const auto end = [&](std::vector<Holding>& v, bool any_key) {
      auto it = std::stable_partition(v.begin(), v.end(), [&](const Holding& h) { return !of_op(any_key)(h); });
      for (auto e = it; e != v.end(); ++e) {
        auto a = actions_.find(e->serial);
        if (a == actions_.end()) continue;
        due.push_back(std::move(a->second));
        due_serials.push_back(e->serial);
        running_.insert(e->serial);
        actions_.erase(a);
      }
      v.erase(it, v.end());
      changed = true;
    };
    const auto reported_keys = [&op] {
      std::vector<std::string> keys;
      if (!op.value.is_object()) return keys;
      auto it = op.value.find("keys");
      if (it == op.value.end() || !it->is_array()) return keys;
      for (const auto& k : *it) {
        if (k.is_string()) keys.push_back(k.get<std::string>());
      }
      return keys;
    };
    if (op.is_ok() && op.f == "acquire") {
      Holding h;
      h.key = op.key;
      h.process = op.process;
      h.since_ns = op.time_ns;
      h.seen = std::chrono::steady_clock::now();
      h.serial = ++serial_;
      h.keys = reported_keys();
      holdings_.push_back(h);
      changed = true;
    } else if (op.is_ok() && op.f == "extend") {
      // The keys of the last ok extend replace those of the acquire (a library may move its keys).
      std::vector<std::string> keys = reported_keys();
      if (!keys.empty()) {
        for (Holding& h : holdings_) {
          if (of_op(false)(h)) h.keys = keys;
        }
      }
    } else if (op.is_info()) {
      // Retired: whatever it held or was releasing is over.
      end(holdings_, true);
      end(releasing_, true);
    } else if (op.is_invoke() && op.f == "release") {
      auto it =
          std::stable_partition(holdings_.begin(), holdings_.end(), [&](const Holding& h) { return !of_op(false)(h); });
      releasing_.insert(releasing_.end(), it, holdings_.end());
      holdings_.erase(it, holdings_.end());
    } else if (op.f == "release") {  // ok or fail
      end(releasing_, false);
    }
  }
  if (!due.empty()) {
    // Outside mu_ (wait_until_released and current() go on), inside the history writer's lock (no op is
    // recorded meanwhile): see on_release.
    for (auto& fn : due) {
      try {
        fn();
      } catch (...) {
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t s : due_serials) {
      running_.erase(s);
      ran_.insert(s);
    }
  }
  if (changed) cv_.notify_all();
}

bool HolderTracker::on_release(const Holding& h, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!in_force(h.serial) || running_.count(h.serial) > 0) return false;
  actions_[h.serial] = std::move(fn);
  return true;
}

bool HolderTracker::cancel_on_release(const Holding& h) {
  std::unique_lock<std::mutex> lock(mu_);
  actions_.erase(h.serial);
  // A running action returns within its own bound (it holds the writer's lock, not this one); this wait is
  // bounded too, which is why an action may capture by reference only what outlives the run.
  cv_.wait_for(lock, std::chrono::seconds(30), [&] { return running_.count(h.serial) == 0; });
  return ran_.count(h.serial) > 0;
}

std::vector<Holding> HolderTracker::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return holdings_;
}

uint64_t HolderTracker::acquires_seen() const {
  std::lock_guard<std::mutex> lock(mu_);
  return serial_;
}

std::optional<Holding> HolderTracker::wait_for_fresh(uint64_t after_serial, std::chrono::milliseconds timeout,
                                                     const std::atomic<bool>* stop) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    for (auto it = holdings_.rbegin(); it != holdings_.rend(); ++it) {
      if (it->serial > after_serial) return *it;
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || (stop && stop->load())) break;
    // stop is not tied to the condition variable: look at it every 20 ms.
    cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(deadline - now, std::chrono::milliseconds(20)));
  }
  if (holdings_.empty()) return std::nullopt;
  return holdings_.back();
}

bool HolderTracker::in_force(uint64_t serial) const {
  const auto is = [serial](const Holding& h) { return h.serial == serial; };
  return running_.count(serial) > 0 || std::any_of(holdings_.begin(), holdings_.end(), is) ||
         std::any_of(releasing_.begin(), releasing_.end(), is);
}

bool HolderTracker::wait_until_released(const Holding& h, std::chrono::milliseconds timeout,
                                        const std::atomic<bool>* stop) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mu_);
  while (in_force(h.serial)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline || (stop && stop->load())) return false;
    // stop is not tied to the condition variable: look at it every 20 ms.
    cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(deadline - now, std::chrono::milliseconds(20)));
  }
  return true;
}

std::vector<size_t> nodes_holding_any(const Cluster& cluster, const std::vector<std::string>& keys,
                                      std::chrono::milliseconds timeout) {
  const KeyHolders* k = cluster.key_holders();
  if (k == nullptr || keys.empty()) return {};  // a cluster without the ability: the plan refused holder targeting
  return k->nodes_holding_any(keys, timeout);
}

std::string HolderNodes::why_none() const {
  if (!nodes.empty()) return "";
  std::string ks;
  for (const auto& k : keys) ks += (ks.empty() ? "" : ", ") + k;
  if (how == kHowReported) return "no running node has the keys the client reported (" + ks + ")";
  return "no running node has the key " + ks +
         " (the request's key; the client reported no Redis keys of its own, protocol 2's \"keys\")";
}

nlohmann::json HolderNodes::to_json(const Cluster& cluster) const {
  nlohmann::json found = nlohmann::json::array();
  for (size_t n : nodes) found.push_back(cluster.nodes()[n].name);
  return {{"how", how}, {"keys", keys}, {"found", found}};
}

HolderNodes find_holder_nodes(const Cluster& cluster, const Holding& h, std::chrono::milliseconds timeout) {
  HolderNodes out;
  if (!h.keys.empty()) {
    out.how = kHowReported;
    out.keys = h.keys;
  } else {
    out.how = kHowRequestKey;
    out.keys = {h.key};
  }
  out.nodes = nodes_holding_any(cluster, out.keys, timeout);
  return out;
}

void mark_not_aimed(nlohmann::json& detail, const std::string& why) {
  detail["aimed"] = false;
  detail["not_aimed_because"] = why;
}

std::string slot_of(Process p, int concurrency) { return client_party(p, concurrency).name(); }

}  // namespace lockcheck
