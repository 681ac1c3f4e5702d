#include "core/client_crashes.h"

#include <algorithm>
#include <stdexcept>

namespace lockcheck {

const std::vector<std::string>& crash_points() {
  static const std::vector<std::string> p = {"mid-acquire", "after-acquire", "mid-release"};
  return p;
}

ClientCrashes::ClientCrashes(int concurrency) : concurrency_(concurrency) {
  if (concurrency < 1) throw std::invalid_argument("ClientCrashes: concurrency must be >= 1");
}

int64_t ClientCrashes::arm(const std::vector<int>& slots, const std::string& point) {
  const auto& points = crash_points();
  if (std::find(points.begin(), points.end(), point) == points.end()) {
    throw std::invalid_argument("ClientCrashes::arm: unknown crash point '" + point + "'");
  }
  if (slots.empty()) throw std::invalid_argument("ClientCrashes::arm: no slot");
  for (int s : slots) {
    if (s < 0 || s >= concurrency_) {
      throw std::invalid_argument("ClientCrashes::arm: slot " + std::to_string(s) + " is not in [0, " +
                                  std::to_string(concurrency_) + ")");
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  arms_.push_back({next_id_++, slots, point});
  return arms_.back().id;
}

bool ClientCrashes::widen(int64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& a : arms_) {
    if (a.id != id) continue;
    a.slots.clear();
    for (int s = 0; s < concurrency_; ++s) a.slots.push_back(s);
    return true;
  }
  return false;
}

void ClientCrashes::disarm_all() noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  arms_.clear();
}

bool ClientCrashes::pending(int64_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(arms_.begin(), arms_.end(), [&](const Arm& a) { return a.id == id; });
}

bool ClientCrashes::crash_point(Process p, const std::string& point) {
  const int slot = static_cast<int>(p % concurrency_);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find_if(arms_.begin(), arms_.end(), [&](const Arm& a) {
    return a.point == point && std::find(a.slots.begin(), a.slots.end(), slot) != a.slots.end();
  });
  if (it == arms_.end()) return false;
  fired_.push_back({it->id, p, slot, point, std::chrono::steady_clock::now()});
  arms_.erase(it);
  return true;
}

std::vector<FiredCrash> ClientCrashes::fired(int64_t after_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FiredCrash> out;
  for (const auto& f : fired_) {
    if (f.arm_id > after_id) out.push_back(f);
  }
  return out;
}

}  // namespace lockcheck
