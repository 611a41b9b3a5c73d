// Run-time checks of core entry points whose other tests only assert that they throw: the exact
// sentence (the functions are pure, so there is no output to leave untouched).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <tessel/core/broadcast.hpp>
#include <tessel/core/env.hpp>
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

// Settings from the environment (TESSEL_STREAMING_STORE_BYTES, TESSEL_SCRATCH_CACHE_BYTES): an
// integer is taken, unset or empty gives the default, anything else is a warning naming the value.
TEST(CoreEnvironment, AnIntegerSettingIsReadAndAMalformedOneIsReported) {
  std::vector<std::string> seen;
  auto previous = set_warning_handler([&](std::string_view s) { seen.emplace_back(s); });
  char const* name = "TESSEL_TEST_ENV_INTEGER";
  ::unsetenv(name);
  EXPECT_EQ(detail::env_integer(name, 7), 7);
  ::setenv(name, "", 1);
  EXPECT_EQ(detail::env_integer(name, 7), 7);
  ::setenv(name, "-12", 1);
  EXPECT_EQ(detail::env_integer(name, 7), -12);
  ::setenv(name, "1GiB", 1);
  EXPECT_EQ(detail::env_integer(name, 7), 7);
  ::unsetenv(name);
  set_warning_handler(std::move(previous));
  EXPECT_EQ(
      seen,
      (std::vector<std::string>{"TESSEL_TEST_ENV_INTEGER='1GiB' is not an integer; using 7."}));
}

}  // namespace
