// Run-time checks of core entry points whose other tests only assert that they throw: the exact
// sentence (the functions are pure, so there is no output to leave untouched).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <tessel/core/broadcast.hpp>
#include <tessel/core/warning.hpp>

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

TEST(CoreWarnings, AHandlerReceivesEachSentenceAndCanBeRestoredOrEmptied) {
  std::vector<std::string> seen;
  auto previous = set_warning_handler([&](std::string_view s) { seen.emplace_back(s); });
  ASSERT_TRUE(previous);  // the default writes to stderr
  detail::warn("first.");
  auto mine = set_warning_handler({});
  detail::warn("dropped.");
  set_warning_handler(std::move(mine));
  detail::warn("second.");
  set_warning_handler(std::move(previous));
  EXPECT_EQ(seen, (std::vector<std::string>{"first.", "second."}));
}

}  // namespace
