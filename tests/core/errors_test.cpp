// Run-time checks of core entry points whose other tests only assert that they throw: the exact
// sentence (the functions are pure, so there is no output to leave untouched).
#include <gtest/gtest.h>

#include <string>

#include <tessel/core/broadcast.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;

using tessel::test::error_of;

TEST(CoreErrors, BlockBroadcastNamesABlockShapeWithANonPositiveExtent) {
  auto const grid = make_layout(make_shape(2, 3));
  EXPECT_EQ(error_of([&] { (void)block_broadcast_layout(grid, make_shape(2, 0)); }),
            "block shape (2,0) has an extent <= 0; block extents must be > 0.");
  // A negative extent is already refused by make_shape, before block_broadcast_layout runs.
  EXPECT_EQ(error_of([&] { (void)block_broadcast_layout(grid, make_shape(-1, 4)); }),
            "shape (-1,4) has a negative extent; extents must be >= 0.");
}

}  // namespace
