// Broadcast layouts: NumPy broadcasting to a shape, and the block-to-element broadcast of a grid.
#include <gtest/gtest.h>

#include <tessel/core/broadcast.hpp>

namespace {

using namespace tessel;

// A row vector (5) broadcast to (3, 5): the new leading mode has stride 0.
static_assert(std::is_same_v<decltype(broadcast_layout(make_layout(make_shape(Int<5>{})),
                                                       make_shape(Int<3>{}, Int<5>{}))),
                             Layout<tuple<Int<3>, Int<5>>, tuple<Int<0>, Int<1>>>>);
// An extent-1 mode broadcast to 4.
static_assert(std::is_same_v<decltype(broadcast_layout(make_layout(make_shape(Int<3>{}, Int<1>{})),
                                                       make_shape(Int<3>{}, Int<4>{}))),
                             Layout<tuple<Int<3>, Int<4>>, tuple<Int<1>, Int<0>>>>);

// Element (r, c) of the block broadcast reads grid (r / 2, c / 3).
constexpr auto grid = make_layout(make_shape(Int<2>{}, Int<2>{}));
constexpr auto bb = block_broadcast_layout(grid, make_shape(Int<2>{}, Int<3>{}));
static_assert(size(get<0>(bb.shape())) == 4 && size(get<1>(bb.shape())) == 6);
static_assert(bb(3, 5) == grid(1, 1) && bb(1, 2) == grid(0, 0) && bb(2, 1) == grid(1, 0));
static_assert(std::is_same_v<decltype(cosize(bb)), Int<4>>);

TEST(Broadcast, NumPyRulesAtRunTime) {
  auto col = make_layout(make_shape(3, 1));
  auto b = broadcast_layout(col, make_shape(2, 3, 4));
  EXPECT_EQ(to_vector(b.shape()), (std::vector<std::int64_t>{2, 3, 4}));
  EXPECT_EQ(to_vector(b.stride()), (std::vector<std::int64_t>{0, 1, 0}));
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 4; ++k) EXPECT_EQ(b(i, j, k), col(j, 0));
}

TEST(Broadcast, IncompatibleExtentsNameBothShapes) {
  try {
    (void)broadcast_layout(make_layout(make_shape(3, 4)), make_shape(5, 4));
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "cannot broadcast shape (3,4) to shape (5,4).");
  }
}

TEST(Broadcast, BlockBroadcastReadsTheGridCellOfEachElement) {
  auto g = make_layout(make_shape(3, 2), make_stride(1, 3));  // column-major grid
  auto bl = block_broadcast_layout(g, make_shape(2, 4));
  for (index_t r = 0; r < 6; ++r)
    for (index_t c = 0; c < 8; ++c) EXPECT_EQ(bl(r, c), g(r / 2, c / 4));
  EXPECT_THROW((void)block_broadcast_layout(g, make_shape(2, 0)), Error);
}

}  // namespace
