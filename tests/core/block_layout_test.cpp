// block_layout in the three orders: types for static arguments, the mapping checked element by
// element, mixed static extents kept, and the errors.
#include <gtest/gtest.h>

#include <tessel/core/block_layout.hpp>
#include <tessel/core/divide.hpp>
#include <tessel/core/select.hpp>

namespace {

using namespace tessel;

constexpr auto l46 = make_layout(make_shape(Int<4>{}, Int<6>{}));
constexpr auto b23 = make_shape(Int<2>{}, Int<3>{});
static_assert(std::is_same_v<decltype(block_layout(l46, b23, BlockOrder::interleaved)),
                             Layout<tuple<Int<2>, Int<2>, Int<2>, Int<3>>,
                                    tuple<Int<12>, Int<6>, Int<3>, Int<1>>>>);
static_assert(std::is_same_v<decltype(block_layout(l46, b23, BlockOrder::reordered)),
                             Layout<tuple<Int<2>, Int<2>, Int<2>, Int<3>>,
                                    tuple<Int<12>, Int<3>, Int<6>, Int<1>>>>);
static_assert(std::is_same_v<decltype(block_layout(l46, b23, BlockOrder::merged)),
                             Layout<tuple<Int<2>, Int<2>, tuple<Int<2>, Int<3>>>,
                                    tuple<Int<12>, Int<3>, tuple<Int<6>, Int<1>>>>>);
// Merged: block (1, 1), element 4 of the block (row 1, column 1) is element (3, 4) = offset 22.
static_assert(block_layout(l46, b23, BlockOrder::merged)(1, 1, 4) == 22);
static_assert(std::is_same_v<decltype(block_grid_shape(make_shape(Int<4>{}, Int<6>{}), b23)),
                             tuple<Int<2>, Int<2>>>);

// The orders are the divides by the block shape: reordered is flat_divide, merged tiled_divide,
// interleaved logical_divide flattened; for static arguments (the types above) and run-time ones.
static_assert(block_layout(l46, b23, BlockOrder::reordered) == flat_divide(l46, b23));
static_assert(block_layout(l46, b23, BlockOrder::merged) == tiled_divide(l46, b23));
static_assert(block_layout(l46, b23, BlockOrder::interleaved) == flatten(logical_divide(l46, b23)));
constexpr auto padded = make_layout(make_shape(index_t{6}, index_t{8}), make_stride(11, 1));
constexpr auto b32 = make_shape(index_t{3}, index_t{2});
static_assert(block_layout(padded, b32, BlockOrder::reordered) == flat_divide(padded, b32));
static_assert(block_layout(padded, b32, BlockOrder::merged) == tiled_divide(padded, b32));
static_assert(block_layout(padded, b32, BlockOrder::interleaved) ==
              flatten(logical_divide(padded, b32)));
static_assert(block_layout(padded, b32, BlockOrder::interleaved) ==
              make_layout(make_shape(2, 3, 4, 2), make_stride(33, 11, 2, 1)));

template <class L, class Order>
void expect_block_mapping(L const& base, index_t b0, index_t b1, Order order) {
  auto s0 = to_index(size(get<0>(base.shape())));
  auto s1 = to_index(size(get<1>(base.shape())));
  auto bl = block_layout(base, make_shape(b0, b1), order);
  index_t g0 = s0 / b0, g1 = s1 / b1;
  for (index_t i = 0; i < g0; ++i)
    for (index_t j = 0; j < g1; ++j)
      for (index_t r = 0; r < b0; ++r)
        for (index_t c = 0; c < b1; ++c) {
          index_t expect = base(i * b0 + r, j * b1 + c);
          if constexpr (std::is_same_v<Order, InterleavedOrder>) {
            ASSERT_EQ(bl(i, r, j, c), expect);
          } else if constexpr (std::is_same_v<Order, ReorderedOrder>) {
            ASSERT_EQ(bl(i, j, r, c), expect);
          } else {
            ASSERT_EQ(bl(i, j, r * b1 + c), expect);
            ASSERT_EQ(bl(i, j, make_tuple(r, c)), expect);
          }
        }
  EXPECT_EQ(size(bl), s0 * s1);
}

TEST(BlockLayout, EveryOrderAddressesTheSameElements) {
  auto compact = make_layout(make_shape(6, 8));
  auto transposed = make_layout(make_shape(6, 8), make_stride(1, 6));
  auto padded = make_layout(make_shape(6, 8), make_stride(11, 1));
  for (auto [b0, b1] :
       std::vector<std::pair<index_t, index_t>>{{1, 1}, {2, 4}, {3, 2}, {6, 8}, {2, 8}}) {
    expect_block_mapping(compact, b0, b1, BlockOrder::interleaved);
    expect_block_mapping(compact, b0, b1, BlockOrder::reordered);
    expect_block_mapping(compact, b0, b1, BlockOrder::merged);
    expect_block_mapping(transposed, b0, b1, BlockOrder::merged);
    expect_block_mapping(padded, b0, b1, BlockOrder::reordered);
  }
}

TEST(BlockLayout, MixedStaticExtentsStayStatic) {
  auto bl = block_layout(make_layout(make_shape(Int<8>{}, index_t{12})),
                         make_shape(Int<4>{}, Int<3>{}), BlockOrder::reordered);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(get<0>(bl.shape()))>, Int<2>>);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(get<2>(bl.shape()))>, Int<4>>);
  EXPECT_EQ(get<1>(bl.shape()), 4);
}

TEST(BlockLayout, NonDividingBlockNamesTheMode) {
  try {
    (void)block_layout(make_layout(make_shape(8, 6)), make_shape(4, 4), BlockOrder::merged);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "block shape (4,4) does not divide shape (8,6): mode 1 has extent 6, which is not "
                 "a multiple of 4.");
  }
  try {
    (void)block_layout(make_layout(make_shape(8, 6)), make_shape(0, 2), BlockOrder::merged);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "block shape (0,2) has extent 0 in mode 0; block extents must be > 0.");
  }
}

TEST(BlockLayout, ZeroExtentsGiveEmptyGrids) {
  auto bl = block_layout(make_layout(make_shape(0, 6)), make_shape(2, 3), BlockOrder::interleaved);
  EXPECT_EQ(size(bl), 0);
  EXPECT_EQ(get<0>(bl.shape()), 0);
}

}  // namespace
