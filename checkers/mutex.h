// The `mutex` checker: linearizability of the lock ops (acquire / release / extend) against an owner-aware
// mutex, checked independently per key with the WGL search (checkers/wgl.h).
//
// Model: state = free | held by p. acquire by p is legal only when free (-> held by p); release by p only when
// held by p (-> free); extend by p only when held by p (no change). fail acquires are removed; info acquires and
// invokes that never completed are optional (may take effect at any point after their invoke, or never).
// The use view: a holder's use of the lock ends within its release whatever the release's outcome (a client
// stops using the lock when it starts to release it; a release that fails because the lock already expired still
// ended the use), and within an extend that did not end ok (a careful client stops the moment its extend fails).
// So a violation means two processes *used* the lock at once; whether that happened within their leases (a double
// grant) or because one outlived its lease (a paused holder) is named in the anomaly.
// Verdict per key: valid / invalid (one anomaly per key, at the deepest point the search reached) / unknown
// (CheckOptions.timeout spent, or the cache memory cap reached). The overall verdict merges the keys.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "checkers/checker.h"
#include "checkers/wgl.h"

namespace lockcheck {

// The owner-aware mutex as a wgl model.
struct MutexModel {
  using State = int64_t;  // the holder's process id, or kFree
  static constexpr State kFree = -1;
  enum Kind : int { kAcquire = 0, kRelease = 1, kExtend = 2 };

  State init() const { return kFree; }
  bool step(const State& s, const wgl::LinOp& op, State* next) const;
  Process exclusive_owner(const State& s) const;
  wgl::OptionalRole optional_role(const wgl::LinOp& op) const;
};

// "acquire" -> kAcquire, ...; -1 for other f's.
int mutex_op_kind(const std::string& f);

struct MutexOptions {
  // Upper bound on the search cache per key (arena + hash table). Past it the key's verdict is unknown.
  size_t max_cache_bytes = size_t{512} << 20;
};

class MutexChecker : public Checker {
 public:
  explicit MutexChecker(MutexOptions options = {}) : options_(options) {}
  std::string name() const override { return "mutex"; }
  CheckResult check(const History& h, const CheckOptions& opts) const override;

 private:
  MutexOptions options_;
};

std::unique_ptr<Checker> make_mutex_checker();

}  // namespace lockcheck
