// View functions: permute / transpose / reshape / flatten / block views / broadcasts, each
// writing through to the original memory, and the bounds checks on views of known storage.
#include <gtest/gtest.h>

#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/views.hpp>

namespace {

using namespace tessel;

auto numbered(index_t rows, index_t cols) {
  auto t = make_host_tensor<float>(make_shape(rows, cols));
  for (index_t i = 0; i < rows * cols; ++i) t[i] = static_cast<float>(i);
  return t;
}

TEST(Views, TransposeAndPermuteWriteThrough) {
  auto t = numbered(3, 4);
  auto tr = transpose(t);
  EXPECT_EQ(tr(3, 1), t(1, 3));
  tr(2, 0) = -5.0f;
  EXPECT_EQ(t(0, 2), -5.0f);
  auto cube = make_host_tensor<int>(make_shape(Int<2>{}, Int<3>{}, Int<4>{}));
  auto p = permute<2, 0, 1>(cube);
  p(3, 1, 2) = 9;
  EXPECT_EQ(cube(1, 2, 3), 9);
}

TEST(Views, ReshapeIsAViewOrAnError) {
  auto t = numbered(4, 6);
  auto r = reshape(t, make_shape(2, 12));
  r(1, 0) = -1.0f;
  EXPECT_EQ(t(2, 0), -1.0f);
  auto cols = t(_, range(0, 4));  // (4, 4):(6, 1)
  EXPECT_THROW((void)reshape(cols, make_shape(16)), Error);
  auto split = reshape(cols, make_shape(4, 2, 2));
  EXPECT_EQ(split(3, 1, 1), t(3, 3));
}

template <class Order>
void check_block_view_writes_through(Order order) {
  auto t = numbered(4, 6);
  auto bv = block_view(t, make_shape(2, 3), order);
  for (index_t bi = 0; bi < 2; ++bi)
    for (index_t bj = 0; bj < 2; ++bj)
      for (index_t r = 0; r < 2; ++r)
        for (index_t c = 0; c < 3; ++c) {
          float* element = nullptr;
          if constexpr (std::is_same_v<Order, InterleavedOrder>) {
            element = &bv(bi, r, bj, c);
          } else if constexpr (std::is_same_v<Order, ReorderedOrder>) {
            element = &bv(bi, bj, r, c);
          } else {
            element = &bv(bi, bj, r * 3 + c);
          }
          *element = 1000.0f + static_cast<float>(bi * 10 + bj);
          EXPECT_EQ(t(bi * 2 + r, bj * 3 + c), 1000.0f + static_cast<float>(bi * 10 + bj));
        }
}

TEST(Views, EveryBlockOrderWritesThrough) {
  check_block_view_writes_through(BlockOrder::interleaved);
  check_block_view_writes_through(BlockOrder::reordered);
  check_block_view_writes_through(BlockOrder::merged);
}

TEST(Views, MergedBlockViewOfAStridedTensorStaysAView) {
  auto t = numbered(4, 6);
  auto tr = transpose(t);  // (6, 4):(1, 6), not contiguous
  auto bv = block_view(tr, make_shape(3, 2), BlockOrder::merged);
  bv(1, 1, 5) = -7.0f;  // block (1, 1), row 2, column 1 -> tr(5, 3) -> t(3, 5)
  EXPECT_EQ(t(3, 5), -7.0f);
}

TEST(Views, BroadcastBlockToElementReadsTheGrid) {
  auto grid = make_host_tensor<float>(make_shape(2, 3));
  for (index_t i = 0; i < 6; ++i) grid[i] = static_cast<float>(i);
  auto e = broadcast_block_to_element(grid, make_shape(2, 2));
  EXPECT_EQ(to_index(size(get<0>(e.shape()))), 4);
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 6; ++c) EXPECT_EQ(e(r, c), grid(r / 2, c / 2));
  e(3, 5) = 50.0f;  // writes the grid cell it reads
  EXPECT_EQ(grid(1, 2), 50.0f);
}

TEST(Views, BroadcastToFollowsNumPy) {
  auto row = make_host_tensor<float>(make_shape(3));
  row(1) = 2.0f;
  auto b = broadcast_to(row, make_shape(4, 3));
  for (index_t i = 0; i < 4; ++i) EXPECT_EQ(b(i, 1), 2.0f);
  EXPECT_THROW((void)broadcast_to(row, make_shape(4, 2)), Error);
}

TEST(Views, ViewAsChecksTheStorage) {
  auto t = numbered(3, 4);
  auto diag = view_as(t, make_layout(make_shape(3), make_stride(5)));
  EXPECT_EQ(diag(2), 10.0f);
  try {
    (void)view_as(t, make_layout(make_shape(3), make_stride(6)));
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "a view with layout (3):(6) at element 0 reaches element 13 of storage that holds "
                 "12 elements.");
  }
}

}  // namespace
