// sparsekit View parity, worked by hand on one 4x8 matrix W(r, c) = 10 r + c (offset 8 r + c) with
// blocks (2, 4): block-view coordinates and their linear offsets in the three orders, the
// block-to-element broadcast (view and copy), and apply_multiplier / apply_mask.
#include <gtest/gtest.h>

#include <array>

#include <tessel/sparsity/block_update.hpp>
#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/materialize.hpp>
#include <tessel/tensor/view_queries.hpp>
#include <tessel/tensor/views.hpp>

namespace {

using namespace tessel;

using Matrix = std::array<std::array<float, 8>, 4>;

auto make_w() {
  auto w = make_host_tensor<float>(make_shape(4, 8));
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 8; ++c) w(r, c) = static_cast<float>(10 * r + c);
  return w;
}

template <class T>
void expect_matrix(T const& t, Matrix const& expected) {
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 8; ++c)
      EXPECT_EQ(t(r, c), expected[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)])
          << "at (" << r << ", " << c << ")";
}

TEST(ViewOps, BlockViewCoordinatesReachTheSameElementInEveryOrder) {
  auto w = make_w();
  // Block (1, 1), in-block row 0, column 2 is element (2, 6): offset 2 * 8 + 6 = 22, value 26.
  auto inter = block_view(w, make_shape(2, 4), BlockOrder::interleaved);  // (B0, b0, B1, b1)
  auto reord = block_view(w, make_shape(2, 4), BlockOrder::reordered);    // (B0, B1, b0, b1)
  auto merged = block_view(w, make_shape(2, 4), BlockOrder::merged);      // (B0, B1, (b0, b1))
  EXPECT_EQ(to_vector(inter.stride()), (std::vector<std::int64_t>{16, 8, 4, 1}));
  EXPECT_EQ(to_vector(reord.stride()), (std::vector<std::int64_t>{16, 4, 8, 1}));
  EXPECT_EQ(linear_offset(inter, 1, 0, 1, 2), 22);
  EXPECT_EQ(linear_offset(reord, 1, 1, 0, 2), 22);
  EXPECT_EQ(linear_offset(merged, 1, 1, 2), 22);
  EXPECT_EQ(merged(1, 1, 2), 26.0f);
  // Block (1, 0), in-block index 5 = row 1, column 1: element (3, 1), offset 25, value 31.
  EXPECT_EQ(linear_offset(merged, 1, 0, 5), 25);
  EXPECT_EQ(linear_offset(inter, 1, 1, 0, 1), 25);
  EXPECT_EQ(linear_offset(reord, 1, 0, 1, 1), 25);
  EXPECT_EQ(merged(1, 0, 5), 31.0f);
  // Every view writes through to W.
  inter(0, 1, 0, 3) = -1.0f;  // element (1, 3)
  reord(0, 1, 1, 0) = -2.0f;  // element (1, 4)
  merged(1, 1, 7) = -3.0f;    // element (3, 7)
  EXPECT_EQ(w(1, 3), -1.0f);
  EXPECT_EQ(w(1, 4), -2.0f);
  EXPECT_EQ(w(3, 7), -3.0f);
}

TEST(ViewOps, LinearOffsetsOfASliceCountFromTheStorage) {
  auto w = make_w();
  auto rows = w(range(1, 3), _);  // rows 1 and 2: starts at element 8
  EXPECT_EQ(storage_offset(rows), 8);
  auto bv = block_view(rows, make_shape(1, 4), BlockOrder::merged);  // (2, 2, (1, 4))
  // Block (1, 1), in-block index 3: row 1 of the slice (row 2 of W), column 7 -> offset 23.
  EXPECT_EQ(linear_offset(bv, 1, 1, 3), 23);
  EXPECT_EQ(bv(1, 1, 3), 27.0f);
  auto tr = transpose(w);  // (8, 4):(1, 8)
  EXPECT_EQ(linear_offset(tr, 6, 2), 22);
  EXPECT_EQ(to_param_rc(tr, make_shape(4, 8), 6, 2), (RowCol{2, 6}));
  EXPECT_EQ(to_param_rc(bv, w, 1, 1, 3), (RowCol{2, 7}));
}

TEST(ViewOps, BroadcastBlockToElementAsViewAndCopy) {
  auto grid = make_host_tensor<float>(make_shape(2, 2));
  grid(0, 0) = 1.0f;
  grid(0, 1) = 2.0f;
  grid(1, 0) = 3.0f;
  grid(1, 1) = 4.0f;
  Matrix const expected = {{{1, 1, 1, 1, 2, 2, 2, 2},
                            {1, 1, 1, 1, 2, 2, 2, 2},
                            {3, 3, 3, 3, 4, 4, 4, 4},
                            {3, 3, 3, 3, 4, 4, 4, 4}}};
  auto view = broadcast_block_to_element(grid, make_shape(2, 4));
  expect_matrix(view, expected);
  auto dense = materialize(view);
  EXPECT_EQ(to_vector(dense.shape()), (std::vector<std::int64_t>{4, 8}));
  EXPECT_EQ(to_vector(dense.stride()), (std::vector<std::int64_t>{8, 1}));
  expect_matrix(dense, expected);
  grid(1, 1) = 9.0f;  // the view follows the grid, the copy does not
  EXPECT_EQ(view(3, 7), 9.0f);
  EXPECT_EQ(dense(3, 7), 4.0f);
}

TEST(ViewOps, ApplyMultiplierScalesEachBlock) {
  auto w = make_w();
  auto grid = make_host_tensor<float>(make_shape(2, 2));
  grid(0, 0) = 1.0f;
  grid(0, 1) = 2.0f;
  grid(1, 0) = 3.0f;
  grid(1, 1) = 4.0f;
  apply_multiplier(w, grid, make_shape(2, 4));
  expect_matrix(w, Matrix{{{0, 1, 2, 3, 8, 10, 12, 14},
                           {10, 11, 12, 13, 28, 30, 32, 34},
                           {60, 63, 66, 69, 96, 100, 104, 108},
                           {90, 93, 96, 99, 136, 140, 144, 148}}});
}

TEST(ViewOps, ApplyMaskZeroesTheMaskedBlocks) {
  auto w = make_w();
  auto mask = make_host_tensor<bool>(make_shape(2, 2));
  mask(0, 1) = true;
  mask(1, 0) = true;
  apply_mask(w, mask, make_shape(2, 4));
  expect_matrix(w, Matrix{{{0, 1, 2, 3, 0, 0, 0, 0},
                           {10, 11, 12, 13, 0, 0, 0, 0},
                           {0, 0, 0, 0, 24, 25, 26, 27},
                           {0, 0, 0, 0, 34, 35, 36, 37}}});
}

}  // namespace
