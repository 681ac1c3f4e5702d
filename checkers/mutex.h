// The `mutex` checker: linearizability of the lock ops (acquire / release / extend) against an owner-aware
// mutex, checked independently per key with the WGL search (checkers/wgl.h).
//
// The semantics, exactly (the brute-force oracle in tests/checker_mutex_oracle_test.cc is written from this text):
//
// Model: state = free | held by p.
//  - acquire by p: legal only when free (-> held by p).
//  - release by p: illegal while another process holds the lock (p removed someone else's lock, or the service
//    granted it twice); otherwise -> free. On a free lock that is a no-op: p removed its own key that no longer
//    counts as a hold (its use ended at an earlier release that failed, and it retried), or nothing (the key
//    had expired).
//  - extend by p: illegal while another process holds the lock; otherwise no change (on a free lock: p extended
//    its own leftover key, or nothing).
// Which ops take effect, and when. An op takes effect at most once, at one instant; the instants of all ops on
// a key form one order consistent with real time, in which every op that takes effect is legal.
//  - ok: took effect, between its invoke and its completion;
//  - fail: did not happen: removed (except the holder's ops below);
//  - info, or invoked and never completed (a crashed client): may take effect at any instant after its invoke,
//    or never.
// The use view. Process p is a *holder* of key k from the completion of an ok acquire of k until the completion
// of its next release of k (whatever its outcome) or of its next extend of k that does not end ok. A holder's
// use of the lock ends within that release or extend, whatever its outcome: a client stops using the lock when
// it starts to release it (a release that fails because the lock already expired still ended the use), and a
// careful client stops the moment its extend fails. So a holder's release (ok, fail or info) and a holder's
// extend that ends fail or info take effect as a *release* between their invoke and completion (one never
// completed: at any instant after its invoke, or never). A release or extend by a process that is not a
// holder (no ok acquire of its own before it, or a retry after its use ended) follows the completion rules
// above: fail removed, ok taken effect, info optional.
// Only client ops whose f is acquire, release or extend count; nemesis ops and other f's are ignored.
// So a violation means two processes *used* the lock at once; whether that happened within their leases (a
// double grant) or because one outlived its lease (a paused holder) is named in the anomaly.
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
