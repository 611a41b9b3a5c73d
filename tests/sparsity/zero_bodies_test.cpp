// The row body of apply_mask / apply_keep_mask, the host twin of its CUDA launch: it zeroes
// exactly the blocks its grid selects and writes nothing else (a NaN elsewhere stays NaN), with one
// lane and with several real lanes (ThreadBlock), for small blocks (a lane per block, batched) and
// large ones (the lanes of a row share a block), through a transposed grid.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <tessel/exec/rows.hpp>
#include <tessel/sparsity/detail/scope_offsets.hpp>
#include <tessel/sparsity/detail/zero_bodies.hpp>
#include <tessel/tensor/host_tensor.hpp>
#include <tessel/tensor/views.hpp>

#include "support/thread_block.hpp"

namespace {

using namespace tessel;
using test::ThreadBlock;

// A (rows, cols) tensor of NaN (so that a stray write would show), blocks (b0, b1), and a grid
// stored transposed; every block whose grid value is true is zeroed. lanes 0: exec::for_each_row.
std::vector<float> run_zero(index_t rows, index_t cols, index_t b0, index_t b1, int lanes) {
  std::vector<float> values(static_cast<std::size_t>(rows * cols), std::nanf(""));
  auto t = make_tensor(values.data(), make_shape(rows, cols));
  index_t const g0 = rows / b0, g1 = cols / b1;
  auto grid_t = make_host_tensor<unsigned char>(make_shape(g1, g0));
  for (index_t i = 0; i < g0 * g1; ++i) grid_t[i] = static_cast<unsigned char>((i * 7) % 3 == 0);
  auto grid = transpose(grid_t);
  auto block = make_shape(b0, b1);
  auto cells = detail::flat_offsets(grid.shape(), grid.stride());
  detail::ZeroBlocksRows<float, unsigned char, 2, decltype(cells), index_t, true> body{
      detail::scope_source(t.data(), t.layout(), block), grid.data(), cells, g0 * g1, b0 * b1};
  if (lanes == 0) {
    exec::for_each_row(exec::Serial{}, body.rows(), body.row_work(), body);
  } else {
    ThreadBlock tb(lanes);
    for (index_t row = 0; row < body.rows(); ++row)
      tb.run([&](ThreadBlock::Context& ctx) {
        body(ctx, row);
        return 0;
      });
  }
  for (index_t r = 0; r < rows; ++r)
    for (index_t c = 0; c < cols; ++c) {
      float const v = values[static_cast<std::size_t>(r * cols + c)];
      bool const zeroed = grid(r / b0, c / b1) != 0;
      EXPECT_TRUE(zeroed ? v == 0.0f && !std::signbit(v) : std::isnan(v)) << r << ", " << c;
    }
  return values;
}

TEST(ZeroBlocksRows, ZeroesExactlyTheSelectedBlocksWithAnyNumberOfLanes) {
  for (auto [b0, b1] : {std::pair{index_t{2}, index_t{4}}, std::pair{index_t{1}, index_t{32}},
                        std::pair{index_t{8}, index_t{8}}, std::pair{index_t{16}, index_t{12}}}) {
    auto const one = run_zero(96, 96, b0, b1, 0);  // (8, 8) and (16, 12): large blocks
    for (int lanes : {1, 3, 8}) {
      auto const many = run_zero(96, 96, b0, b1, lanes);
      EXPECT_EQ(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)), 0)
          << b0 << "x" << b1 << ", " << lanes << " lanes";
    }
  }
}

}  // namespace
