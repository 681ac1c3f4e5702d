#include "core/client_pauses.h"

#include <signal.h>

#include <algorithm>
#include <stdexcept>

namespace lockcheck {

ClientPauses::ClientPauses(int concurrency) : concurrency_(concurrency) {
  if (concurrency < 1) throw std::invalid_argument("ClientPauses: concurrency must be >= 1");
}

int64_t ClientPauses::arm(const std::vector<int>& slots, std::chrono::milliseconds pause,
                          std::optional<std::chrono::milliseconds> widen_after) {
  if (slots.empty()) throw std::invalid_argument("ClientPauses::arm: no slot");
  if (pause.count() <= 0) throw std::invalid_argument("ClientPauses::arm: the pause must be > 0 ms");
  for (int s : slots) {
    if (s < 0 || s >= concurrency_) {
      throw std::invalid_argument("ClientPauses::arm: slot " + std::to_string(s) + " is not in [0, " +
                                  std::to_string(concurrency_) + ")");
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  Arm a{next_id_++, slots, pause, std::nullopt};
  if (widen_after) a.any_slot_from = std::chrono::steady_clock::now() + *widen_after;
  arms_.push_back(a);
  return a.id;
}

void ClientPauses::disarm_all() {
  std::lock_guard<std::mutex> lock(mu_);
  arms_.clear();
}

void ClientPauses::release_all() noexcept {
  {
    std::lock_guard<std::mutex> lock(mu_);
    arms_.clear();
    ++release_epoch_;
  }
  cv_.notify_all();
}

std::vector<FiredPause> ClientPauses::fired(int64_t after_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FiredPause> out;
  for (const auto& f : fired_) {
    if (f.arm_id > after_id) out.push_back(f);
  }
  return out;
}

bool ClientPauses::wait_fired(int64_t id, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    return std::any_of(fired_.begin(), fired_.end(), [&](const FiredPause& f) { return f.arm_id == id; });
  });
}

bool ClientPauses::armed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !arms_.empty();
}

std::chrono::milliseconds ClientPauses::pause_point(Process p, const std::atomic<bool>& stop,
                                                    std::optional<int> os_pid) {
  const int slot = static_cast<int>(p % concurrency_);
  std::unique_lock<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  auto it = std::find_if(arms_.begin(), arms_.end(), [&](const Arm& a) {
    return std::find(a.slots.begin(), a.slots.end(), slot) != a.slots.end() ||
           (a.any_slot_from && now >= *a.any_slot_from);
  });
  if (it == arms_.end() || stop.load()) return std::chrono::milliseconds(0);
  const auto start = std::chrono::steady_clock::now();
  const auto until = start + it->pause;
  const uint64_t epoch = release_epoch_;
  FiredPause f;
  f.arm_id = it->id;
  f.process = p;
  f.slot = slot;
  f.armed_for = it->pause;
  f.started = start;
  if (os_pid && *os_pid > 0 && ::kill(*os_pid, SIGSTOP) == 0) f.os_pid = os_pid;
  fired_.push_back(f);
  arms_.erase(it);  // one arm, one pause
  const size_t mine = fired_.size() - 1;
  cv_.notify_all();  // wait_fired
  // The stop flag is not tied to the condition variable: wake every 20 ms to look at it.
  while (!stop.load() && release_epoch_ == epoch) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(20)));
  }
  if (fired_[mine].os_pid) ::kill(*fired_[mine].os_pid, SIGCONT);
  const auto lasted = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
  fired_[mine].lasted = lasted;
  return lasted;
}

}  // namespace lockcheck
