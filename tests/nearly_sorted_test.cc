// core/nearly_sorted.h against std::sort and std::stable_sort.
#include "core/nearly_sorted.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace lockcheck {
namespace {

TEST(NearlySortedTest, SortsAsStdSortDoes) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 300; ++round) {
    const size_t n = rng() % 2000;
    const int out_of_place = static_cast<int>(rng() % 4);  // none, a few, many, everything shuffled
    std::vector<std::pair<int64_t, size_t>> v(n);
    for (size_t i = 0; i < n; ++i) {
      int64_t t = static_cast<int64_t>(i) * 10;
      if (out_of_place == 1 && rng() % 50 == 0) t -= static_cast<int64_t>(rng() % 500);
      if (out_of_place == 2 && rng() % 3 == 0) t += static_cast<int64_t>(rng() % 5000) - 2500;
      if (out_of_place == 3) t = static_cast<int64_t>(rng() % 1000);
      v[i] = {t, i};
    }
    auto want = v;
    std::sort(want.begin(), want.end());
    sort_nearly_sorted(&v);
    EXPECT_EQ(v, want) << round;
  }
}

TEST(NearlySortedTest, StableOrderIsTheStableSortsPermutation) {
  std::mt19937_64 rng(6);
  for (int round = 0; round < 300; ++round) {
    const size_t n = rng() % 1000;
    std::vector<int64_t> keys(n);
    for (size_t i = 0; i < n; ++i)
      keys[i] = static_cast<int64_t>(i / 3) - static_cast<int64_t>(rng() % (round % 5 + 1));
    std::vector<size_t> want(n);
    std::iota(want.begin(), want.end(), 0);
    std::stable_sort(want.begin(), want.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
    EXPECT_EQ(stable_order(keys), want) << round;
  }
}

}  // namespace
}  // namespace lockcheck
