// Top-k per scope: worked cases (ties, NaN, k = 0, whole tensor), random properties, and errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include <tessel/sparsity/topk.hpp>
#include <tessel/tensor/host_tensor.hpp>

#include "test_support.hpp"

namespace {

using namespace tessel;
using sparsity_test::error_of;

auto scores_of(std::vector<float> const& v, index_t rows, index_t cols) {
  auto t = make_host_tensor<float>(make_shape(rows, cols));
  for (index_t i = 0; i < rows * cols; ++i) t[i] = v[static_cast<std::size_t>(i)];
  return t;
}

template <class T>
std::vector<int> kept(T const& mask) {
  std::vector<int> out;
  for (index_t i = 0; i < to_index(size(mask.layout())); ++i) out.push_back(mask[i] ? 1 : 0);
  return out;
}

TEST(Topk, KeepsTheHighestPerScope) {
  auto s = scores_of({3, 1, 4, 1, 5, 9, 2, 6}, 2, 4);
  auto mask = topk_mask(s, make_shape(1, 4), 2);
  EXPECT_EQ(kept(mask), (std::vector<int>{1, 0, 1, 0, 0, 1, 0, 1}));
  auto pairs = topk_mask(s, make_shape(1, 2), 1);  // every (1, 2) group of blocks
  EXPECT_EQ(kept(pairs), (std::vector<int>{1, 0, 1, 0, 0, 1, 0, 1}));
  auto whole = topk_mask(s, make_shape(2, 4), 3);
  EXPECT_EQ(kept(whole), (std::vector<int>{0, 0, 0, 0, 1, 1, 0, 1}));
  auto columns = topk_mask(s, make_shape(2, 1), 1);  // scopes down the columns
  EXPECT_EQ(kept(columns), (std::vector<int>{0, 0, 1, 0, 1, 1, 0, 1}));
}

TEST(Topk, TiesGoToTheLowerIndexAndNanRanksLast) {
  auto ties = scores_of({5, 5, 5, 1, 2, 7, 7, 7}, 2, 4);
  EXPECT_EQ(kept(topk_mask(ties, make_shape(1, 4), 2)), (std::vector<int>{1, 1, 0, 0, 0, 1, 1, 0}));
  float nan = std::numeric_limits<float>::quiet_NaN();
  auto with_nan = scores_of({nan, -1, nan, -2}, 1, 4);
  EXPECT_EQ(kept(topk_mask(with_nan, make_shape(1, 4), 3)), (std::vector<int>{1, 1, 0, 1}));
  EXPECT_EQ(kept(topk_mask(with_nan, make_shape(1, 4), 2)), (std::vector<int>{0, 1, 0, 1}));
}

TEST(Topk, KZeroKeepsNothingAndKEqualToTheScopeKeepsAll) {
  auto s = scores_of({3, 1, 4, 1}, 1, 4);
  EXPECT_EQ(kept(topk_mask(s, make_shape(1, 4), 0)), (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(kept(topk_mask(s, make_shape(1, 4), 4)), (std::vector<int>{1, 1, 1, 1}));
}

TEST(Topk, RandomScoresKeepExactlyKAndOnlyTheLargest) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<int> small(0, 5);  // many ties
  auto s = make_host_tensor<float>(make_shape(6, 12));
  for (index_t i = 0; i < 72; ++i) s[i] = static_cast<float>(small(gen));
  index_t k = 3;
  auto mask = topk_mask(s, make_shape(2, 3), k);
  for (index_t sr = 0; sr < 3; ++sr)
    for (index_t sc = 0; sc < 4; ++sc) {
      index_t count = 0;
      float min_kept = 1e9f, max_dropped = -1e9f;
      index_t last_kept_tie = -1, first_dropped_tie = 100;
      for (index_t i = 0; i < 6; ++i) {
        index_t r = sr * 2 + i / 3, c = sc * 3 + i % 3;
        if (mask(r, c)) {
          ++count;
          min_kept = std::min(min_kept, s(r, c));
        } else {
          max_dropped = std::max(max_dropped, s(r, c));
        }
      }
      EXPECT_EQ(count, k);
      EXPECT_GE(min_kept, max_dropped);
      // Among blocks tied at the threshold, the kept ones come first in the scope.
      for (index_t i = 0; i < 6; ++i) {
        index_t r = sr * 2 + i / 3, c = sc * 3 + i % 3;
        if (s(r, c) != min_kept) continue;
        if (mask(r, c)) last_kept_tie = i;
        if (!mask(r, c)) first_dropped_tie = std::min(first_dropped_tie, i);
      }
      EXPECT_LT(last_kept_tie, first_dropped_tie);
    }
}

TEST(Topk, StaticScopesGiveAStaticMaskShape) {
  auto s = make_host_tensor<float>(make_shape(Int<2>{}, Int<8>{}));
  auto mask = topk_mask(s, make_shape(Int<1>{}, Int<4>{}), Int<2>{});
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(mask.shape())>, tuple<Int<2>, Int<8>>>);
  EXPECT_EQ(kept(mask), (std::vector<int>{1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0}));
}

TEST(Topk, Errors) {
  auto s = scores_of({3, 1, 4, 1, 5, 9, 2, 6}, 2, 4);
  EXPECT_EQ(error_of([&] { (void)topk_mask(s, make_shape(1, 4), 5); }),
            "k = 5 exceeds the 4 blocks of a scope of shape (1,4).");
  EXPECT_EQ(error_of([&] { (void)topk_mask(s, make_shape(1, 4), -1); }),
            "k = -1 is negative; top-k keeps k >= 0 blocks per scope.");
  EXPECT_EQ(error_of([&] { (void)topk_mask(s, make_shape(1, 3), 1); }),
            "scope shape (1,3) does not divide the block grid (2,4): mode 1 has 4 blocks, which is "
            "not a multiple of 3.");
}

}  // namespace
