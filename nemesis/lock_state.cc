#include "nemesis/lock_state.h"

#include <algorithm>

namespace lockcheck {

const char* to_string(ProcessLockState s) {
  switch (s) {
    case ProcessLockState::kFree: return "free";
    case ProcessLockState::kAcquiring: return "acquiring";
    case ProcessLockState::kHeld: return "held";
    case ProcessLockState::kRenewing: return "renewing";
    case ProcessLockState::kReleasing: return "releasing";
  }
  return "free";
}

const char* to_string(RunLockState s) {
  switch (s) {
    case RunLockState::kFree: return "free";
    case RunLockState::kAcquiring: return "acquiring";
    case RunLockState::kHeldEarly: return "held-early";
    case RunLockState::kHeldLate: return "held-late";
    case RunLockState::kRenewing: return "renewing";
    case RunLockState::kReleasing: return "releasing";
  }
  return "free";
}

const char* to_string(LockEventKind k) {
  switch (k) {
    case LockEventKind::kAcquireInvoke: return "acquire-invoke";
    case LockEventKind::kGrant: return "grant";
    case LockEventKind::kExtendInvoke: return "extend-invoke";
    case LockEventKind::kRenewed: return "renewed";
    case LockEventKind::kReleaseInvoke: return "release-invoke";
    case LockEventKind::kReleased: return "released";
    case LockEventKind::kLost: return "lost";
    case LockEventKind::kRetired: return "retired";
  }
  return "grant";
}

RunLockState LockSnapshot::run_state() const {
  // Precedence (header comment): renewing > releasing > held-early > held-late > acquiring > free.
  bool renewing = false, releasing = false, early = false, late = false, acquiring = false;
  for (const ProcessLock& p : processes) {
    if (p.state == ProcessLockState::kAcquiring) {
      acquiring = true;
      continue;
    }
    if (!p.live(now)) continue;  // expired: its lock is gone whatever the process believes
    if (p.state == ProcessLockState::kRenewing) renewing = true;
    if (p.state == ProcessLockState::kReleasing) releasing = true;
    if (p.early(now)) {
      early = true;
    } else {
      late = true;
    }
  }
  if (renewing) return RunLockState::kRenewing;
  if (releasing) return RunLockState::kReleasing;
  if (early) return RunLockState::kHeldEarly;
  if (late) return RunLockState::kHeldLate;
  if (acquiring) return RunLockState::kAcquiring;
  return RunLockState::kFree;
}

std::optional<LockEvent> LockSnapshot::since(LockEventKind k, uint64_t after) const {
  const auto& e = newest(k);
  if (e && e->seq > after) return e;
  return std::nullopt;
}

std::optional<ProcessLock> LockSnapshot::newest_live() const {
  std::optional<ProcessLock> out;
  for (const ProcessLock& p : processes) {
    if (p.live(now) && (!out || p.grant_seq > out->grant_seq)) out = p;
  }
  return out;
}

LockStateView::LockStateView(int64_t ttl_ms) : ttl_ms_(std::max<int64_t>(1, ttl_ms)) {}

std::shared_ptr<LockStateView> LockStateView::attach(HistoryWriter& history, int64_t ttl_ms) {
  auto v = std::make_shared<LockStateView>(ttl_ms);
  history.observe([v](const Op& op) { v->on_op(op); });
  return v;
}

void LockStateView::on_op(const Op& op) { on_op(op, std::chrono::steady_clock::now()); }

void LockStateView::event(LockEventKind k, const Op& op, SteadyTime seen) {
  LockEvent e;
  e.seq = ++seq_;
  e.kind = k;
  e.process = op.process;
  e.key = op.key;
  e.time_ns = op.time_ns;
  e.seen = seen;
  last_[static_cast<size_t>(k)] = std::move(e);
}

void LockStateView::on_op(const Op& op, SteadyTime seen) {
  if (!op.is_client()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = procs_.find(op.process);
    const auto free = [&] {
      if (it != procs_.end()) procs_.erase(it);
    };
    const auto validity = [&](SteadyTime invoked) {
      ProcessLock& p = it->second;
      if (op.validity_ms.has_value() && *op.validity_ms >= 0) {
        p.validity_ms = *op.validity_ms;
        p.validity_reported = true;
        p.validity_end = seen + std::chrono::milliseconds(p.validity_ms);
      } else {
        p.validity_ms = ttl_ms_;
        p.validity_reported = false;
        p.validity_end = invoked + std::chrono::milliseconds(ttl_ms_);
      }
    };
    if (op.is_notice()) {
      // The library said the lock is gone: the holding is over, whatever the process does next.
      if (it != procs_.end() && it->second.holds() && (op.key.empty() || op.key == it->second.key)) free();
      event(LockEventKind::kLost, op, seen);
    } else if (op.is_info()) {
      // Retired (core/op.h): whatever it held or was doing is over.
      free();
      event(LockEventKind::kRetired, op, seen);
    } else if (op.f == "acquire") {
      if (op.is_invoke()) {
        ProcessLock p;
        p.process = op.process;
        p.state = ProcessLockState::kAcquiring;
        p.key = op.key;
        p.invoked = seen;
        procs_[op.process] = p;
        event(LockEventKind::kAcquireInvoke, op, seen);
      } else if (op.is_ok()) {
        if (it == procs_.end()) {  // an ok whose invoke came before the view was attached
          it = procs_.emplace(op.process, ProcessLock{}).first;
          it->second.process = op.process;
          it->second.invoked = seen;
        }
        it->second.state = ProcessLockState::kHeld;
        it->second.key = op.key;
        it->second.since = seen;
        validity(it->second.invoked);
        ++grants_;
        event(LockEventKind::kGrant, op, seen);
        it->second.grant_seq = seq_;
      } else {
        free();
      }
    } else if (op.f == "extend") {
      if (it == procs_.end()) return;  // an extend of nothing this view saw held
      if (op.is_invoke()) {
        it->second.state = ProcessLockState::kRenewing;
        it->second.invoked = seen;
        ++extends_;
        event(LockEventKind::kExtendInvoke, op, seen);
      } else {
        it->second.state = ProcessLockState::kHeld;
        if (op.is_ok()) {
          it->second.since = seen;  // a renewal starts a new lease: early and late count from it
          validity(it->second.invoked);
          event(LockEventKind::kRenewed, op, seen);
        }
      }
    } else if (op.f == "release") {
      if (op.is_invoke()) {
        if (it != procs_.end()) it->second.state = ProcessLockState::kReleasing;
        event(LockEventKind::kReleaseInvoke, op, seen);
      } else {
        free();
        event(LockEventKind::kReleased, op, seen);
      }
    } else {
      return;  // read, add, increment: the resource, not the lock
    }
  }
  cv_.notify_all();
}

LockSnapshot LockStateView::snapshot_locked(SteadyTime now) const {
  LockSnapshot s;
  s.now = now;
  s.processes.reserve(procs_.size());
  for (const auto& [p, l] : procs_) s.processes.push_back(l);
  s.seq = seq_;
  s.grants = grants_;
  s.extends = extends_;
  s.last = last_;
  return s;
}

LockSnapshot LockStateView::snapshot() const { return snapshot(std::chrono::steady_clock::now()); }

LockSnapshot LockStateView::snapshot(SteadyTime now) const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_locked(now);
}

std::optional<LockSnapshot> LockStateView::wait_until(const std::function<bool(const LockSnapshot&)>& pred,
                                                      SteadyTime deadline, const std::atomic<bool>* stop) const {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    const auto now = std::chrono::steady_clock::now();
    LockSnapshot s = snapshot_locked(now);
    if (pred(s)) return s;
    if (now >= deadline || (stop && stop->load())) return std::nullopt;
    cv_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(deadline - now, std::chrono::milliseconds(10)));
  }
}

}  // namespace lockcheck
