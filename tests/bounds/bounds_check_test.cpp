// Element access with TESSEL_CHECK_BOUNDS on (the default in unoptimized builds without NDEBUG;
// this program turns it on in a release build): t(i, j) and t[i] out of range throw a sentence
// naming the coordinate and the shape, on views too; in range they read what unchecked access
// reads. A program of its own: the setting must be the same in every translation unit.
#include <gtest/gtest.h>

#include <tessel/tessel.hpp>

#include "support/error_of.hpp"

static_assert(TESSEL_CHECK_BOUNDS == 1, "this program is built with TESSEL_CHECK_BOUNDS=1");

namespace {

using namespace tessel;
using test::error_of;

TEST(BoundsCheck, OutOfRangeCoordinatesThrow) {
  auto t = make_host_tensor<float>(make_shape(2, 3));
  t(1, 2) = 5.0f;
  EXPECT_EQ(t(1, 2), 5.0f);
  EXPECT_EQ(t[5], 5.0f);
  EXPECT_EQ(error_of([&] { t(2, 0) = 1.0f; }),
            "coordinate (2,0) is out of bounds for a tensor of shape (2,3).");
  EXPECT_EQ(error_of([&] { (void)t(0, -1); }),
            "coordinate (0,-1) is out of bounds for a tensor of shape (2,3).");
  EXPECT_EQ(error_of([&] { (void)t[6]; }),
            "coordinate (6) is out of bounds for a tensor of shape (2,3).");
  auto blocks = block_view(t.view(), make_shape(1, 3), BlockOrder::merged);  // (2,1,(1,3))
  EXPECT_EQ(blocks(1, 0, 2), 5.0f);
  EXPECT_EQ(error_of([&] { (void)blocks(1, 1, 0); }),
            "coordinate (1,1,0) is out of bounds for a tensor of shape (2,1,3).");
}

}  // namespace
