// A hash table from 64-bit keys to small values, in one array (open addressing, linear probing): no allocation
// per entry, unlike std::unordered_map, whose node per insert and free per erase dominate the checkers' passes
// over a million ops keyed by (key, process). Not thread-safe. Iteration order is unspecified.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/huge_pages.h"

namespace lockcheck {

template <class V>
class FlatTable {
 public:
  // The value of key, or nullptr.
  V* find(uint64_t key) {
    if (size_ == 0) return nullptr;
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.used) return nullptr;
      if (s.key == key) return &s.value;
    }
  }
  const V* find(uint64_t key) const { return const_cast<FlatTable*>(this)->find(key); }
  bool contains(uint64_t key) const { return find(key) != nullptr; }

  // The value of key, inserted as V() when absent.
  V& operator[](uint64_t key) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    for (size_t i = slot_of(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (!s.used) {
        s.used = true;
        s.key = key;
        s.value = V();
        ++size_;
        return s.value;
      }
      if (s.key == key) return s.value;
    }
  }

  // Removes key; false when it was absent. (Backward-shift deletion: no tombstones.)
  bool erase(uint64_t key) {
    if (size_ == 0) return false;
    size_t i = slot_of(key);
    for (;; i = (i + 1) & mask_) {
      if (!slots_[i].used) return false;
      if (slots_[i].key == key) break;
    }
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (!slots_[j].used) break;
      const size_t home = slot_of(slots_[j].key);
      // Move j back into the hole at i unless its home lies cyclically in (i, j].
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      slots_[i] = std::move(slots_[j]);
      i = j;
    }
    slots_[i].used = false;
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Calls fn(key, value) for every entry.
  template <class Fn>
  void for_each(Fn fn) const {
    for (const Slot& s : slots_) {
      if (s.used) fn(s.key, s.value);
    }
  }

 private:
  struct Slot {
    uint64_t key = 0;
    V value{};
    bool used = false;
  };
  size_t slot_of(uint64_t key) const {
    key ^= key >> 33;  // a 64-bit finalizer (murmur3's): keys that differ in high bits only spread too
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return static_cast<size_t>(key) & mask_;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    assign_huge(&slots_, old.empty() ? 16 : old.size() * 2, Slot{});  // a table per process id can be big
    mask_ = slots_.size() - 1;
    size_ = 0;
    for (Slot& s : old) {
      if (s.used) (*this)[s.key] = std::move(s.value);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace lockcheck
