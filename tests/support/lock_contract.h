// A lock contract shared by the adapter tests of lock services that report validity and fencing tokens.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "locks/lock_client.h"

namespace lockcheck {
namespace testing_util {

// The contract of a lock that reports validity and fencing tokens (etcd's and ZooKeeper's adapters): a acquires
// with a validity in (min_validity, ttl] and a token; b is refused, cannot release or extend what it never held;
// a extends (validity > min_validity) and releases once; then b acquires with a larger token. token_is says what
// the token is, for the message.
inline void expect_lock_contract(LockClient& a, LockClient& b, std::chrono::milliseconds ttl,
                                 int64_t min_validity_ms, const std::string& token_is) {
  LockResult r = a.acquire("lock-0", ttl);
  ASSERT_EQ(r.outcome, OpType::kOk) << r.error;
  ASSERT_TRUE(r.validity_ms.has_value());
  EXPECT_GT(*r.validity_ms, min_validity_ms);
  EXPECT_LE(*r.validity_ms, ttl.count());
  ASSERT_TRUE(r.token.has_value());
  LockResult busy = b.acquire("lock-0", ttl);
  EXPECT_EQ(busy.outcome, OpType::kFail) << busy.error;
  EXPECT_EQ(b.release("lock-0").outcome, OpType::kFail);  // b never held it
  EXPECT_EQ(b.extend("lock-0", ttl).outcome, OpType::kFail);
  LockResult ext = a.extend("lock-0", ttl);
  EXPECT_EQ(ext.outcome, OpType::kOk) << ext.error;
  ASSERT_TRUE(ext.validity_ms.has_value());
  EXPECT_GT(*ext.validity_ms, min_validity_ms);
  EXPECT_EQ(a.release("lock-0").outcome, OpType::kOk);
  EXPECT_EQ(a.release("lock-0").outcome, OpType::kFail);  // released already
  LockResult rb = b.acquire("lock-0", ttl);
  ASSERT_EQ(rb.outcome, OpType::kOk) << rb.error;
  ASSERT_TRUE(rb.token.has_value());
  EXPECT_GT(*rb.token, *r.token) << token_is << " is a fencing token: it only grows";
  EXPECT_EQ(b.release("lock-0").outcome, OpType::kOk);
}

}  // namespace testing_util
}  // namespace lockcheck
