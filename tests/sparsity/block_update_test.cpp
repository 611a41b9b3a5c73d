// apply_multiplier / apply_mask through strided, transposed and block-view tensors, and every
// error path: the exact sentence, with the tensor untouched.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include <tessel/sparsity/block_update.hpp>
#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/views.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;

auto numbered(index_t rows, index_t cols) {
  auto t = make_host_tensor<float>(make_shape(rows, cols));
  for (index_t i = 0; i < rows * cols; ++i) t[i] = static_cast<float>(i + 1);
  return t;
}

template <class T>
std::vector<float> values(T const& t) {
  std::vector<float> out;
  for (index_t i = 0; i < to_index(size(t.layout())); ++i) out.push_back(t[i]);
  return out;
}

using tessel::test::error_of;

TEST(BlockUpdate, MaskThroughATransposedView) {
  auto w = numbered(4, 8);
  // W^T is (8, 4); with blocks (4, 2) its block (0, 0) is W's rows 0-1, columns 0-3.
  auto mask = make_host_tensor<bool>(make_shape(2, 2));
  mask(0, 0) = true;
  apply_mask(transpose(w), mask, make_shape(4, 2));
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 8; ++c) {
      bool zeroed = r < 2 && c < 4;
      EXPECT_EQ(w(r, c), zeroed ? 0.0f : static_cast<float>(r * 8 + c + 1));
    }
}

TEST(BlockUpdate, MultiplierThroughAStridedSlice) {
  auto w = numbered(4, 8);
  auto right = w(_, range(4, 8));  // (4, 4):(8, 1), starting at column 4
  auto grid = make_host_tensor<float>(make_shape(2, 2));
  grid(0, 0) = 10.0f;
  grid(0, 1) = 1.0f;
  grid(1, 0) = 1.0f;
  grid(1, 1) = -1.0f;
  apply_multiplier(right, grid, make_shape(2, 2));
  EXPECT_EQ(w(0, 3), 4.0f);        // left half untouched
  EXPECT_EQ(w(1, 5), 14.0f * 10);  // block (0, 0) of the slice
  EXPECT_EQ(w(1, 6), 15.0f);       // block (0, 1): times 1
  EXPECT_EQ(w(3, 7), -32.0f);      // block (1, 1): times -1
  EXPECT_EQ(w(2, 4), 21.0f);       // block (1, 0): times 1
}

TEST(BlockUpdate, MaskThroughAnInterleavedBlockView) {
  auto w = numbered(4, 8);
  auto inter = block_view(w, make_shape(2, 4), BlockOrder::interleaved);  // (2, 2, 2, 4)
  // Blocks (1, 2, 1, 4) of the rank-4 view are W's (2, 4) blocks; grid (2, 1, 2, 1).
  auto mask = make_host_tensor<bool>(make_shape(2, 1, 2, 1));
  mask(1, 0, 0, 0) = true;  // W's block (1, 0): rows 2-3, columns 0-3
  apply_mask(inter, mask, make_shape(1, 2, 1, 4));
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 8; ++c)
      EXPECT_EQ(w(r, c), (r >= 2 && c < 4) ? 0.0f : static_cast<float>(r * 8 + c + 1));
}

TEST(BlockUpdate, MaskZeroesNanAndInfinity) {
  auto w = numbered(2, 2);
  w(0, 0) = std::numeric_limits<float>::quiet_NaN();
  w(0, 1) = std::numeric_limits<float>::infinity();
  auto mask = make_host_tensor<bool>(make_shape(1, 1));
  mask(0, 0) = true;
  apply_mask(w, mask, make_shape(2, 2));
  EXPECT_EQ(values(w), (std::vector<float>{0, 0, 0, 0}));
}

TEST(BlockUpdate, StaticShapesAndIntegerGrids) {
  auto w = make_host_tensor<int>(make_shape(Int<2>{}, Int<4>{}));
  for (index_t i = 0; i < 8; ++i) w[i] = 1;
  auto grid = make_host_tensor<int>(make_shape(Int<1>{}, Int<2>{}));
  grid(0, 0) = 3;
  grid(0, 1) = 5;
  apply_multiplier(w, grid, make_shape(Int<2>{}, Int<2>{}));
  EXPECT_EQ(w(1, 1), 3);
  EXPECT_EQ(w(1, 2), 5);
}

TEST(BlockUpdate, WrongGridShapeWritesNothing) {
  auto w = numbered(8, 16);
  auto before = values(w);
  auto mask = make_host_tensor<bool>(make_shape(3, 4));
  mask(0, 0) = true;
  EXPECT_EQ(error_of([&] { apply_mask(w, mask, make_shape(2, 4)); }),
            "mask grid has shape (3,4) but tensor (8,16) with blocks (2,4) needs (4,4).");
  auto grid = make_host_tensor<float>(make_shape(3, 4));
  EXPECT_EQ(error_of([&] { apply_multiplier(w, grid, make_shape(2, 4)); }),
            "multiplier grid has shape (3,4) but tensor (8,16) with blocks (2,4) needs (4,4).");
  EXPECT_EQ(values(w), before);
}

TEST(BlockUpdate, NonDividingBlockWritesNothing) {
  auto w = numbered(8, 16);
  auto before = values(w);
  auto mask = make_host_tensor<bool>(make_shape(2, 4));
  mask(0, 0) = true;
  EXPECT_EQ(error_of([&] { apply_mask(w, mask, make_shape(3, 4)); }),
            "block shape (3,4) does not divide shape (8,16): mode 0 has extent 8, which is not a "
            "multiple of 3.");
  EXPECT_EQ(error_of([&] { apply_mask(w, mask, make_shape(0, 4)); }),
            "block shape (0,4) has extent 0 in mode 0; block extents must be > 0.");
  EXPECT_EQ(values(w), before);
}

TEST(BlockUpdate, RunTimeRankMismatchWritesNothing) {
  auto w = numbered(8, 16);
  auto before = values(w);
  auto mask = make_host_tensor<bool>(make_shape(4, 4));
  mask(0, 0) = true;
  DynRankTuple<4> block{2, 4, 1};  // e.g. read from a config file
  EXPECT_EQ(error_of([&] { apply_mask(w, mask, block); }),
            "block shape (2,4,1) has rank 3 but the tensor of shape (8,16) has rank 2.");
  EXPECT_EQ(values(w), before);
  DynRankTuple<4> ok{2, 4};
  apply_mask(w, mask, ok);
  EXPECT_EQ(w(1, 3), 0.0f);
  EXPECT_EQ(w(1, 4), 21.0f);
}

}  // namespace

namespace {

using namespace tessel;

TEST(BlockUpdate, EveryExecutorWritesTheSame) {
  auto grid = make_host_tensor<float>(make_shape(4, 8));
  auto mask = make_host_tensor<bool>(make_shape(4, 8));
  for (index_t i = 0; i < 32; ++i) {
    grid[i] = static_cast<float>(i % 5) - 2.0f;
    mask[i] = i % 3 == 0;
  }
  auto run = [&](auto executor) {
    auto w = numbered(64, 128);
    apply_multiplier(transpose(w), transpose(grid), make_shape(16, 16), executor);
    apply_mask(w, mask, make_shape(16, 16), executor);
    return values(w);
  };
  auto const serial = run(exec::Serial{});
  auto const w0 = numbered(64, 128);
  for (index_t r = 0; r < 64; ++r)
    for (index_t c = 0; c < 128; ++c) {
      float const want = mask(r / 16, c / 16) ? 0.0f : w0(r, c) * grid(r / 16, c / 16);
      ASSERT_EQ(serial[static_cast<std::size_t>(r * 128 + c)], want) << r << ", " << c;
    }
  EXPECT_EQ(run(exec::OpenMP{.threads = 2}), serial);
  EXPECT_EQ(run(exec::Auto{.parallel_threshold = 0}), serial);
}

TEST(BlockUpdate, AGridOverlappingTheTensorIsReadBeforeItIsWritten) {
  // The multiplier grid is the tensor's own first column: the executor sees the overlap and
  // reads the grid before writing (a pass through a temporary).
  auto w = numbered(4, 2);          // 1 2 / 3 4 / 5 6 / 7 8
  auto column = w(_, range(0, 1));  // (4, 1): 1 3 5 7
  apply_multiplier(w, column, make_shape(1, 2), exec::Serial{});
  EXPECT_EQ(values(w), (std::vector<float>{1, 2, 9, 12, 25, 30, 49, 56}));
}

}  // namespace
