#include "checkers/state_cache.h"

#include <cstring>

namespace lockcheck {

namespace {

constexpr size_t kInitialSlots = 1024;

// A 64-bit finaliser (the avalanche step of a well-known integer mixer): every input bit affects every output bit.
inline uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

inline uint32_t tag_of(uint64_t h) { return static_cast<uint32_t>(h >> 32) | 1u; }  // never 0

}  // namespace

StateCache::StateCache(size_t key_words, size_t max_bytes)
    : key_words_(key_words == 0 ? 1 : key_words), max_bytes_(max_bytes) {
  table_.assign(kInitialSlots, 0);
  mask_ = kInitialSlots - 1;
}

uint64_t StateCache::hash(const uint64_t* key, size_t key_words) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ key_words;
  for (size_t i = 0; i < key_words; ++i) h = mix(h ^ key[i]) + 0x9e3779b97f4a7c15ULL * (i + 1);
  return h;
}

size_t StateCache::bytes() const { return table_.capacity() * sizeof(uint64_t) + arena_.capacity() * sizeof(uint64_t); }

size_t StateCache::find_slot(const uint64_t* key, uint64_t h, bool* found) const {
  const uint64_t tag = tag_of(h);
  size_t i = static_cast<size_t>(h) & mask_;
  for (;;) {
    const uint64_t s = table_[i];
    if (s == 0) {
      *found = false;
      return i;
    }
    if ((s >> 32) == tag) {
      const size_t entry = static_cast<size_t>(s & 0xffffffffULL) - 1;
      if (std::memcmp(&arena_[entry * key_words_], key, key_words_ * sizeof(uint64_t)) == 0) {
        *found = true;
        return i;
      }
    }
    i = (i + 1) & mask_;
  }
}

bool StateCache::contains(const uint64_t* key, uint64_t h) const {
  bool found = false;
  find_slot(key, h, &found);
  return found;
}

bool StateCache::grow() {
  const size_t new_slots = table_.size() * 2;
  // The old table is alive while the new one is filled.
  const size_t need = (table_.size() + new_slots) * sizeof(uint64_t) + arena_.capacity() * sizeof(uint64_t);
  if (need > max_bytes_) return false;
  std::vector<uint64_t> next(new_slots, 0);
  const size_t next_mask = new_slots - 1;
  for (uint64_t s : table_) {
    if (s == 0) continue;
    const size_t entry = static_cast<size_t>(s & 0xffffffffULL) - 1;
    const uint64_t h = hash(&arena_[entry * key_words_], key_words_);
    size_t i = static_cast<size_t>(h) & next_mask;
    while (next[i] != 0) i = (i + 1) & next_mask;
    next[i] = s;
  }
  table_.swap(next);
  mask_ = next_mask;
  return true;
}

StateCache::Insert StateCache::insert(const uint64_t* key, uint64_t h) {
  bool found = false;
  size_t i = find_slot(key, h, &found);
  if (found) return Insert::kPresent;
  if (count_ >= 0xfffffffeULL) return Insert::kFull;
  if ((count_ + 1) * 2 > table_.size()) {
    if (!grow()) return Insert::kFull;
    i = find_slot(key, h, &found);
  }
  if (arena_.size() + key_words_ > arena_.capacity()) {
    const size_t next_cap = arena_.capacity() == 0 ? key_words_ * 1024 : arena_.capacity() * 2;
    // Reallocation briefly holds both buffers.
    if ((arena_.capacity() + next_cap + table_.size()) * sizeof(uint64_t) > max_bytes_) return Insert::kFull;
    arena_.reserve(next_cap);
  }
  const size_t entry = count_++;
  arena_.insert(arena_.end(), key, key + key_words_);
  table_[i] = (static_cast<uint64_t>(tag_of(h)) << 32) | static_cast<uint64_t>(entry + 1);
  return Insert::kInserted;
}

}  // namespace lockcheck
