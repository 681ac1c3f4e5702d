// Counting one round of per-node replies against a quorum (Redlock and its fencing rounds). Pure, no Redis.
#pragma once

namespace lockcheck {

struct QuorumCount {
  int yes = 0;      // the node certainly did what was asked (SET NX accepted, key deleted, expiry extended)
  int no = 0;       // it certainly did not (NX refused, value not ours, error reply, request never sent)
  int unknown = 0;  // it may have (timeout, connection closed after the request was written)
};

enum class QuorumVerdict {
  kReached,      // yes >= quorum
  kUnreachable,  // yes + unknown < quorum: no quorum can have done it, whatever the unknown ones did
  kUnknown,      // neither: a quorum may or may not have done it
};

inline QuorumVerdict judge(const QuorumCount& c, int quorum) {
  if (c.yes >= quorum) return QuorumVerdict::kReached;
  if (c.yes + c.unknown < quorum) return QuorumVerdict::kUnreachable;
  return QuorumVerdict::kUnknown;
}

// The majority of n nodes: n/2 + 1.
inline int majority(int n) { return n / 2 + 1; }

}  // namespace lockcheck
