// A compact, exact hash set of fixed-width keys (arrays of 64-bit words), used by the linearizability search to
// remember search states already known to fail. Keys live in one flat arena; the table holds 64-bit slots
// (32-bit hash tag | 32-bit entry number), open addressing with linear probing, load factor at most 1/2.
// Lookups compare the full key, so a hit is never a false positive.
//
// Memory is bounded: insert() reports kFull instead of growing past max_bytes (arena + table, counting the
// table's growth), so the caller can give up with "unknown" rather than run out of memory.
// Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lockcheck {

class StateCache {
 public:
  // REQUIRES: key_words >= 1.
  StateCache(size_t key_words, size_t max_bytes);

  static uint64_t hash(const uint64_t* key, size_t key_words);

  // REQUIRES: key has key_words() words; h == hash(key, key_words()).
  bool contains(const uint64_t* key, uint64_t h) const;

  enum class Insert { kInserted, kPresent, kFull };
  Insert insert(const uint64_t* key, uint64_t h);

  size_t key_words() const { return key_words_; }
  size_t size() const { return count_; }
  // Bytes held by the arena and the table (capacity, not size).
  size_t bytes() const;

 private:
  size_t find_slot(const uint64_t* key, uint64_t h, bool* found) const;
  bool grow();

  size_t key_words_;
  size_t max_bytes_;
  size_t count_ = 0;
  size_t mask_ = 0;              // table size - 1 (a power of two)
  std::vector<uint64_t> table_;  // 0 = empty; else (tag << 32) | (entry + 1)
  std::vector<uint64_t> arena_;  // count_ * key_words_ words
};

}  // namespace lockcheck
