// Assignment through the host executor: write-through into every kind of view, broadcast views as
// sources, aliasing (the element-for-element fast path and the temporary), and the errors that
// leave the destination untouched.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include <tessel/tessel.hpp>

#include "expr/helpers.hpp"

namespace {

using namespace tessel;
using test::elements;
using test::random_tensor;

auto numbered(index_t rows, index_t cols) {
  auto t = make_host_tensor<float>(make_shape(rows, cols));
  for (index_t i = 0; i < rows * cols; ++i) t[i] = static_cast<float>(i);
  return t;
}

TEST(WriteThrough, SlicesAndRanges) {
  auto t = numbered(4, 6);
  t(1, _) = -1.0f;                  // a row
  t(_, 2) = t(_, 3) * 10.0f;        // a column from a column
  t(range(2, 4), range(4, 6)) = 7;  // a block
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 6; ++c) {
      float want = float(r * 6 + c);
      if (r == 1) want = -1.0f;
      if (c == 2) want = (r == 1 ? -1.0f : float(r * 6 + 3)) * 10.0f;
      if (r >= 2 && c >= 4) want = 7.0f;
      EXPECT_EQ(t(r, c), want) << r << "," << c;
    }
}

TEST(WriteThrough, PermutedReshapedFlattenedAndRawPointerViews) {
  auto cube = make_host_tensor<int>(make_shape(Int<2>{}, Int<3>{}, Int<4>{}));
  auto p = permute<2, 0, 1>(cube);  // (4, 2, 3)
  auto src = make_host_tensor<int>(make_shape(4, 2, 3));
  std::iota(src.data(), src.data() + 24, 0);
  p = src;
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 4; ++k) EXPECT_EQ(cube(i, j, k), src(k, i, j));
  auto t = numbered(4, 6);
  auto r = reshape(t, make_shape(2, 12));
  r = r + 100.0f;
  EXPECT_EQ(t(3, 5), 123.0f);
  auto f = flatten(t);
  f = 1.0f;
  EXPECT_EQ(t(2, 2), 1.0f);
  std::vector<double> raw(12, 0.0);
  auto view = make_tensor(raw.data(), make_shape(3, 4));
  auto source = numbered(4, 3);
  view = transpose(source) * 1.0;
  EXPECT_EQ(raw[1 * 4 + 2], 7.0);  // (1, 2) <- transposed (2, 1) = 2 * 3 + 1
}

template <class Order>
void check_block_view_assignment(Order order) {
  auto t = numbered(4, 6);
  auto bv = block_view(t, make_shape(2, 3), order);
  auto before = elements(t);
  bv = bv * 2.0f + 1.0f;  // reads and writes the same elements
  auto after = elements(t);
  for (std::size_t i = 0; i < before.size(); ++i) EXPECT_EQ(after[i], before[i] * 2 + 1);
  // A compact source in block coordinates: element k of the view (row-major) receives k.
  auto src = test::make_like(as_expr(bv));
  std::iota(src.data(), src.data() + 24, 0.0f);
  bv = src;
  for (index_t k = 0; k < 24; ++k) EXPECT_EQ(bv[k], float(k));
  // Block (1, 0), in-block row 1, column 2 is t(3, 2).
  float want = 0;
  if constexpr (std::is_same_v<Order, InterleavedOrder>) want = bv(1, 1, 0, 2);
  if constexpr (std::is_same_v<Order, ReorderedOrder>) want = bv(1, 0, 1, 2);
  if constexpr (std::is_same_v<Order, MergedOrder>) want = bv(1, 0, 5);
  EXPECT_EQ(t(3, 2), want);
  EXPECT_EQ(std::accumulate(t.data(), t.data() + 24, 0.0f), 276.0f);  // 0 + 1 + ... + 23
}

TEST(WriteThrough, EveryBlockOrder) {
  check_block_view_assignment(BlockOrder::interleaved);
  check_block_view_assignment(BlockOrder::reordered);
  check_block_view_assignment(BlockOrder::merged);
}

TEST(WriteThrough, MergedBlockViewOfATransposedTensor) {
  auto t = numbered(4, 6);
  auto bv = block_view(transpose(t), make_shape(3, 2), BlockOrder::merged);  // (2,2,(3,2))
  bv = bv * -1.0f;
  for (index_t i = 0; i < 24; ++i) EXPECT_EQ(t[i], -float(i));
}

TEST(BroadcastSources, BlockToElementAndNumPyBroadcasts) {
  auto grid = make_host_tensor<float>(make_shape(2, 3));
  for (index_t i = 0; i < 6; ++i) grid[i] = float(10 * i);
  auto t = numbered(4, 9);
  t = t + broadcast_block_to_element(grid, make_shape(2, 3));
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 9; ++c) EXPECT_EQ(t(r, c), float(r * 9 + c) + grid(r / 2, c / 3));
  auto row = make_host_tensor<float>(make_shape(9));
  for (index_t c = 0; c < 9; ++c) row(c) = float(c);
  t = broadcast_to(row, make_shape(4, 9));
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 9; ++c) EXPECT_EQ(t(r, c), float(c));
}

TEST(StaticShapes, WorkLikeRunTimeShapes) {
  auto a = make_host_tensor<float>(make_shape(Int<4>{}, Int<8>{}));
  auto b = make_host_tensor<float>(make_shape(4, 8));
  for (index_t i = 0; i < 32; ++i) b[i] = float(i);
  a = b * 3.0f;
  auto s = make_host_tensor<float>(make_shape(Int<4>{}));
  s = sum(a, mode<1>);
  for (index_t r = 0; r < 4; ++r) EXPECT_EQ(s(r), 3.0f * float(8 * 8 * r + 28));
}

TEST(ExplicitExecutor, AssignsIntoAViewTemporary) {
  auto t = numbered(3, 5);
  auto x = random_tensor<float>(make_shape(3), -1, 1, 1);
  assign(t(_, 4), x * 2.0f, exec::Serial{});
  assign(t(_, 0), x, exec::OpenMP{.threads = 2});
  for (index_t r = 0; r < 3; ++r) {
    EXPECT_EQ(t(r, 4), x(r) * 2.0f);
    EXPECT_EQ(t(r, 0), x(r));
    EXPECT_EQ(t(r, 2), float(r * 5 + 2));
  }
}

// ---- aliasing ----

TEST(Aliasing, ElementForElementIsSafe) {
  auto x = numbered(5, 7);
  x = x * 2.0f + x;
  for (index_t i = 0; i < 35; ++i) EXPECT_EQ(x[i], 3.0f * float(i));
  auto v = x(_, range(1, 4));
  v = v - x(_, range(1, 4)) + 1.0f;  // two views of the same elements
  EXPECT_EQ(x(2, 3), 1.0f);
  EXPECT_EQ(x(2, 4), 3.0f * 18);
}

TEST(Aliasing, TransposeIntoItselfUsesATemporary) {
  auto x = numbered(6, 6);
  x = transpose(x);
  for (index_t r = 0; r < 6; ++r)
    for (index_t c = 0; c < 6; ++c) EXPECT_EQ(x(r, c), float(c * 6 + r));
  auto y = numbered(4, 6);
  auto yt = reshape(y, make_shape(6, 4));
  y = transpose(yt) + 0.0f;  // same memory, another layout
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 6; ++c) EXPECT_EQ(y(r, c), float(c * 4 + r));
}

TEST(Aliasing, OverlappingShiftedSlices) {
  auto v = make_host_tensor<int>(make_shape(10));
  std::iota(v.data(), v.data() + 10, 0);
  v(range(1, 10)) = v(range(0, 9));  // shift right: a forward loop would smear v(0)
  for (index_t i = 1; i < 10; ++i) EXPECT_EQ(v(i), i - 1);
  std::iota(v.data(), v.data() + 10, 0);
  v(range(0, 9)) = v(range(1, 10)) * 1;
  for (index_t i = 0; i < 9; ++i) EXPECT_EQ(v(i), i + 1);
  auto m = numbered(5, 4);
  m(range(1, 5), _) = m(range(0, 4), _) + 0.5f;
  for (index_t r = 1; r < 5; ++r)
    for (index_t c = 0; c < 4; ++c) EXPECT_EQ(m(r, c), float((r - 1) * 4 + c) + 0.5f);
  auto row0 = numbered(3, 4);
  row0 = row0(0, _) * 1.0f;  // a broadcast of the destination's own first row
  for (index_t i = 0; i < 12; ++i) EXPECT_EQ(row0[i], float(i % 4));
}

TEST(Aliasing, InterleavedDisjointColumnsAreStillCorrect) {
  auto m = numbered(3, 4);
  m(_, range(0, 2)) = m(_, range(2, 4));
  for (index_t r = 0; r < 3; ++r) {
    EXPECT_EQ(m(r, 0), float(r * 4 + 2));
    EXPECT_EQ(m(r, 1), float(r * 4 + 3));
  }
}

TEST(Aliasing, ReductionsAndSoftmaxIntoTheirOwnInput) {
  auto x = numbered(4, 5);
  x(_, 0) = sum(x, mode<1>);  // column 0 is part of every row being summed
  for (index_t r = 0; r < 4; ++r) EXPECT_EQ(x(r, 0), float(25 * r + 10));
  auto y = random_tensor<float>(make_shape(5, 5), -2, 2, 2);
  auto ref = make_host_tensor<float>(make_shape(5, 5));
  ref = softmax(transpose(y));
  y = softmax(transpose(y));
  EXPECT_EQ(elements(y), elements(ref));
}

// ---- errors ----

TEST(AssignErrors, ADestinationWithRepeatedElements) {
  auto row = make_host_tensor<float>(make_shape(3));
  row = 5.0f;
  auto b = broadcast_to(row, make_shape(4, 3));
  try {
    b = 1.0f;
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot assign to a tensor whose layout (4,3):(0,1) maps several coordinates "
                 "to one element.");
  }
  for (index_t i = 0; i < 3; ++i) EXPECT_EQ(row(i), 5.0f);
  auto s = make_host_tensor<float>(make_shape(4, 3));
  try {
    b = s + 1.0f;
    FAIL() << "no error";
  } catch (Error const&) {
  }
  for (index_t i = 0; i < 3; ++i) EXPECT_EQ(row(i), 5.0f);
}

}  // namespace
