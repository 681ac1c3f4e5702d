// core/flat_table.h against std::unordered_map, on random inserts, lookups and erases.
#include "core/flat_table.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

namespace lockcheck {
namespace {

TEST(FlatTableTest, AgreesWithUnorderedMap) {
  std::mt19937_64 rng(3);
  for (const uint64_t key_range : {uint64_t{8}, uint64_t{1000}, uint64_t{1} << 40}) {
    FlatTable<int64_t> t;
    std::unordered_map<uint64_t, int64_t> want;
    for (int step = 0; step < 200000; ++step) {
      // Keys shaped like the checkers' (key id << 32 | process), and arbitrary ones.
      const uint64_t key = step % 2 ? ((rng() % 4) << 32 | rng() % key_range) : rng() % key_range;
      switch (rng() % 4) {
        case 0:
        case 1:
          t[key] = step;
          want[key] = step;
          break;
        case 2: EXPECT_EQ(t.erase(key), want.erase(key) == 1); break;
        default: {
          const int64_t* v = t.find(key);
          auto it = want.find(key);
          ASSERT_EQ(v != nullptr, it != want.end()) << key;
          if (v) EXPECT_EQ(*v, it->second);
        }
      }
      ASSERT_EQ(t.size(), want.size());
    }
    size_t seen = 0;
    t.for_each([&](uint64_t k, int64_t v) {
      ++seen;
      EXPECT_EQ(want.at(k), v);
    });
    EXPECT_EQ(seen, want.size());
  }
}

}  // namespace
}  // namespace lockcheck
