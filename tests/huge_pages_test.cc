// core/huge_pages.h: advice only, so every helper must leave a vector exactly as the plain operation would.
#include "core/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace lockcheck {
namespace {

TEST(HugePages, AssignHugeFillsLikeAssignAtEverySize) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{3} << 20}) {  // the last: 24 MB, advised
    std::vector<int64_t> v;
    assign_huge(&v, n, int64_t{-1});
    ASSERT_EQ(v.size(), n);
    for (size_t i = 0; i < n; i += 4093) EXPECT_EQ(v[i], -1);
    if (n > 0) EXPECT_EQ(v.back(), -1);
  }
}

TEST(HugePages, ResizeHugeKeepsTheElementsAndFillsTheRest) {
  std::vector<int32_t> v = {7, 8, 9};
  resize_huge(&v, 5, int32_t{-1});
  EXPECT_EQ(v, (std::vector<int32_t>{7, 8, 9, -1, -1}));
  resize_huge(&v, 2);  // shrinking is resize's
  EXPECT_EQ(v, (std::vector<int32_t>{7, 8}));
  // Growing one index at a time (a table by process id) keeps every element and grows the capacity
  // geometrically: few reallocations for a million indices.
  std::vector<int64_t> t;
  size_t moves = 0;
  const int64_t* data = nullptr;
  for (int64_t p = 0; p < 1000000; ++p) {
    resize_huge(&t, static_cast<size_t>(p) + 1, int64_t{-1});
    t[static_cast<size_t>(p)] = p;
    if (t.data() != data) {
      ++moves;
      data = t.data();
    }
  }
  EXPECT_LT(moves, 25u);
  for (int64_t p = 0; p < 1000000; p += 9973) EXPECT_EQ(t[static_cast<size_t>(p)], p);
}

TEST(HugePages, AdviceOnAnyRangeIsHarmless) {
  std::vector<char> small(100, 'x');
  advise_huge_pages(small.data(), small.size());
  advise_huge_pages(nullptr, 1 << 30);
  std::vector<char> big;
  big.reserve(size_t{9} << 20);
  advise_huge_pages(big);
  big.assign(size_t{9} << 20, 'y');
  EXPECT_EQ(big[size_t{5} << 20], 'y');
  EXPECT_EQ(small[99], 'x');
}

TEST(HugePages, PopulatingLeavesTheContentsAlone) {
  std::vector<int64_t> v(1000, 5);
  populate_pages(v.data(), v.size() * sizeof(int64_t));  // pages already written: their data stays
  populate_pages(nullptr, 1 << 20);
  populate_pages(v.data(), 3);  // less than a page: nothing
  for (int64_t x : v) ASSERT_EQ(x, 5);
  // A reserved vector filled front to back with PopulateAhead, as the history reader fills its ops: populated a
  // chunk or two ahead, never past its capacity, every element as pushed.
  std::vector<int64_t> w;
  w.reserve(size_t{1} << 20);  // 8 MB
  PopulateAhead ahead;
  for (int64_t i = 0; i < (int64_t{1} << 20); ++i) {
    ahead.fill(w);
    w.push_back(i);
  }
  for (int64_t i = 0; i < (int64_t{1} << 20); i += 4099) ASSERT_EQ(w[static_cast<size_t>(i)], i);
  EXPECT_EQ(w.back(), (int64_t{1} << 20) - 1);
}

}  // namespace
}  // namespace lockcheck
