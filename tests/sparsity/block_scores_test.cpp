// block_scores: L1 / L2 / sum of squares / a caller's reduction, checked against sums worked by
// hand on W(r, c) = 10 r + c (4x8, blocks (2, 4)); static grids; strided inputs; errors.
#include <gtest/gtest.h>

#include <cmath>

#include <tessel/sparsity/block_scores.hpp>
#include <tessel/tensor/views.hpp>

#include "test_support.hpp"

namespace {

using namespace tessel;
using sparsity_test::error_of;

auto make_w() {
  auto w = make_host_tensor<float>(make_shape(4, 8));
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 8; ++c) w(r, c) = static_cast<float>(10 * r + c);
  return w;
}

// Static tensor and block shapes give a static grid type.
using StaticW = decltype(make_host_tensor<float>(make_shape(Int<4>{}, Int<8>{})));
static_assert(
    std::is_same_v<std::remove_cvref_t<decltype(block_scores(std::declval<StaticW const&>(),
                                                             make_shape(Int<2>{}, Int<4>{}))
                                                    .shape())>,
                   tuple<Int<2>, Int<2>>>);

TEST(BlockScores, L1SumsAbsoluteValuesPerBlock) {
  auto w = make_w();
  w(0, 1) = -1.0f;  // |x| counts
  auto s = block_scores(w, make_shape(2, 4), L1Norm{});
  // (0,0): 0+1+2+3 + 10+11+12+13 = 52; (0,1): 4+5+6+7 + 14+15+16+17 = 84
  // (1,0): 20+21+22+23 + 30+31+32+33 = 212; (1,1): 24+...+27 + 34+...+37 = 244
  EXPECT_EQ(s(0, 0), 52.0f);
  EXPECT_EQ(s(0, 1), 84.0f);
  EXPECT_EQ(s(1, 0), 212.0f);
  EXPECT_EQ(s(1, 1), 244.0f);
}

TEST(BlockScores, L2IsTheNormAndSumOfSquaresItsSquare) {
  auto w = make_w();
  auto sq = block_scores(w, make_shape(2, 4), SumOfSquares{});
  auto l2 = block_scores(w, make_shape(2, 4));  // L2Norm by default, as sparsekit
  // Block (0, 0): 0 + 1 + 4 + 9 + 100 + 121 + 144 + 169 = 548.
  EXPECT_EQ(sq(0, 0), 548.0f);
  EXPECT_FLOAT_EQ(l2(0, 0), std::sqrt(548.0f));
  // Block (1, 1): 576 + 625 + 676 + 729 + 1156 + 1225 + 1296 + 1369 = 7652.
  EXPECT_EQ(sq(1, 1), 7652.0f);
}

TEST(BlockScores, ACallerReductionSeesEachBlockInRowMajorOrder) {
  auto w = make_w();
  auto first = block_scores(w, make_shape(2, 4), [](auto const& block) { return block(0); });
  auto last = block_scores(w, make_shape(2, 4), [](auto const& block) { return block(7); });
  EXPECT_EQ(first(1, 1), 24.0f);
  EXPECT_EQ(last(1, 1), 37.0f);
  auto count = block_scores(w, make_shape(2, 4), [](auto const& block) {
    return static_cast<int>(size(block.layout()));
  });
  static_assert(std::is_same_v<decltype(count)::value_type, int>);
  EXPECT_EQ(count(0, 1), 8);
}

TEST(BlockScores, ATransposedViewScoresTheTransposedGrid) {
  auto w = make_w();
  auto s = block_scores(transpose(w), make_shape(4, 2), L1Norm{});
  EXPECT_EQ(s(0, 1), 212.0f);  // block (0, 1) of W^T is block (1, 0) of W
  EXPECT_EQ(s(1, 0), 84.0f);
}

TEST(BlockScores, IntegerTensorsScoreInDouble) {
  auto t = make_host_tensor<int>(make_shape(2, 2));
  t(0, 0) = -3;
  t(1, 1) = 4;
  auto s = block_scores(t, make_shape(2, 2));
  static_assert(std::is_same_v<decltype(s)::value_type, double>);
  EXPECT_EQ(s(0, 0), 5.0);
}

TEST(BlockScores, NonDividingBlockIsAnError) {
  auto w = make_w();
  EXPECT_EQ(error_of([&] { (void)block_scores(w, make_shape(3, 4)); }),
            "block shape (3,4) does not divide shape (4,8): mode 0 has extent 4, which is not a "
            "multiple of 3.");
}

}  // namespace

namespace {

using namespace tessel;

TEST(BlockScores, EveryExecutorGivesTheSameScores) {
  auto w = make_host_tensor<float>(make_shape(64, 96));
  for (index_t i = 0; i < 64 * 96; ++i) w[i] = static_cast<float>(i % 37) * 0.25f - 4.0f;
  for (auto const& b : {make_shape(8, 8), make_shape(64, 1), make_shape(1, 96)}) {
    auto serial = block_scores(w, b, SumOfSquares{}, exec::Serial{});
    auto threads = block_scores(w, b, SumOfSquares{}, exec::OpenMP{.threads = 2});
    auto l2 = block_scores(w, b, exec::Auto{.parallel_threshold = 0});
    auto first = block_scores(
        w, b, [](auto const& block) { return block(0); }, exec::OpenMP{.threads = 2});
    index_t const n = to_index(size(serial.layout()));
    index_t const cols = to_index(get<1>(b));
    index_t const rows = to_index(get<0>(b));
    for (index_t g = 0; g < n; ++g) {
      EXPECT_EQ(serial[g], threads[g]);
      EXPECT_FLOAT_EQ(l2[g], std::sqrt(serial[g]));
      index_t const grid_cols = 96 / cols;
      EXPECT_EQ(first[g], w(g / grid_cols * rows, g % grid_cols * cols));
    }
  }
}

// A score of one's own, as an expression of the block view: the largest |x| of each block.
struct MaxAbs {
  template <class E>
  static auto of_blocks(E const& blocks) {
    return max(abs(blocks), mode<-1>);
  }
};

TEST(BlockScores, AScoreTypeWithAnExpressionRunsThroughTheExecutor) {
  auto w = make_w();
  w(1, 6) = -100.0f;
  auto s = block_scores(w, make_shape(2, 4), MaxAbs{}, exec::Serial{});
  EXPECT_EQ(s(0, 0), 13.0f);
  EXPECT_EQ(s(0, 1), 100.0f);
  EXPECT_EQ(s(1, 1), 37.0f);
}

}  // namespace
