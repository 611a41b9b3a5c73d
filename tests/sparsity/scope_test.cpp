// Scopes over a block grid: the scope grid (static when static), the scope view, and the errors.
#include <gtest/gtest.h>

#include <tessel/sparsity/scope.hpp>
#include <tessel/tensor/host_tensor.hpp>

#include "test_support.hpp"

namespace {

using namespace tessel;
using sparsity_test::error_of;

static_assert(std::is_same_v<decltype(scope_grid_shape(make_shape(Int<4>{}, Int<8>{}),
                                                       make_shape(Int<1>{}, Int<4>{}))),
                             tuple<Int<4>, Int<2>>>);

TEST(Scope, ScopeGridCountsScopesPerMode) {
  EXPECT_EQ(to_vector(scope_grid_shape(make_shape(4, 8), make_shape(1, 8))),
            (std::vector<std::int64_t>{4, 1}));  // every row of blocks
  EXPECT_EQ(to_vector(scope_grid_shape(make_shape(4, 8), make_shape(4, 8))),
            (std::vector<std::int64_t>{1, 1}));  // the whole tensor
  auto mixed = scope_grid_shape(make_shape(Int<4>{}, index_t{8}), make_shape(Int<2>{}, 4));
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(get<0>(mixed))>, Int<2>>);
  EXPECT_EQ(get<1>(mixed), 2);
}

TEST(Scope, ScopeViewListsEachScopesBlocksAndWritesThrough) {
  auto grid = make_host_tensor<int>(make_shape(2, 8));
  for (index_t i = 0; i < 16; ++i) grid[i] = static_cast<int>(i);
  auto scopes = scope_view(grid, make_shape(1, 4));  // (2, 2, (1, 4))
  EXPECT_EQ(scopes(1, 1, 2), 14);                    // row 1, blocks 4..7, the third
  scopes(0, 1, 0) = -1;
  EXPECT_EQ(grid(0, 4), -1);
}

TEST(Scope, ScopeShapeErrors) {
  EXPECT_EQ(error_of([] { (void)scope_grid_shape(make_shape(4, 8), make_shape(1, 3)); }),
            "scope shape (1,3) does not divide the block grid (4,8): mode 1 has 8 blocks, which is "
            "not a multiple of 3.");
  EXPECT_EQ(error_of([] { (void)scope_grid_shape(make_shape(4, 8), make_shape(0, 4)); }),
            "scope shape (0,4) has extent 0 in mode 0; scope extents must be > 0.");
  EXPECT_EQ(error_of([] {
              (void)scope_grid_shape(make_shape(4, 8), DynRankTuple<3>{1, 4, 1});
            }),
            "scope shape (1,4,1) has rank 3 but the tensor of shape (4,8) has rank 2.");
}

}  // namespace
