// coalesce and remove_zero_strides: post-conditions over every small layout, static answers as
// types, and static and run-time arguments giving the same answers.
#include <gtest/gtest.h>

#include <tessel/core/coalesce.hpp>

#include "small_layouts.hpp"

namespace {

using namespace tessel;

// A compact layout coalesces to one mode; extent-1 modes disappear.
static_assert(
    std::is_same_v<decltype(coalesce(make_layout(make_shape(Int<2>{}, Int<3>{}, Int<4>{})))),
                   Layout<tuple<Int<24>>, tuple<Int<1>>>>);
static_assert(
    std::is_same_v<decltype(coalesce(make_layout(make_shape(Int<2>{}, Int<1>{}, Int<4>{}),
                                                 make_stride(Int<16>{}, Int<9>{}, Int<1>{})))),
                   Layout<tuple<Int<2>, Int<4>>, tuple<Int<16>, Int<1>>>>);
// Nested modes are flattened first.
static_assert(std::is_same_v<
              decltype(coalesce(make_layout(make_shape(Int<2>{}, make_shape(Int<3>{}, Int<4>{}))))),
              Layout<tuple<Int<24>>, tuple<Int<1>>>>);
// All extents 1 -> (1):(0).
static_assert(std::is_same_v<decltype(coalesce(make_layout(make_shape(Int<1>{}, Int<1>{})))),
                             Layout<tuple<Int<1>>, tuple<Int<0>>>>);
static_assert(std::is_same_v<decltype(coalesce(make_layout(make_shape()))),
                             Layout<tuple<Int<1>>, tuple<Int<0>>>>);

// Broadcast modes go; static strides decide which, so run-time extents stay where they are.
static_assert(std::is_same_v<decltype(remove_zero_strides(make_layout(
                                 make_shape(Int<4>{}, Int<5>{}), make_stride(Int<0>{}, Int<1>{})))),
                             Layout<tuple<Int<5>>, tuple<Int<1>>>>);
static_assert(std::is_same_v<decltype(remove_zero_strides(
                                 make_layout(make_shape(3, 5), make_stride(Int<0>{}, Int<1>{})))),
                             Layout<tuple<index_t>, tuple<Int<1>>>>);

TEST(Coalesce, KeepsTheMappingOfEverySmallLayout) {
  for (auto const& small : test_support::small_layouts()) {
    auto l = small.layout();
    auto c = coalesce(l);
    ASSERT_EQ(size(c), size(l)) << to_string(l.shape()) << ":" << to_string(l.stride());
    EXPECT_LE(rank(c), rank(l));
    for (index_t i = 0; i < size(l); ++i)
      ASSERT_EQ(c(i), l(i)) << to_string(l.shape()) << ":" << to_string(l.stride()) << " at " << i;
    // Nothing left to merge: no extent-1 mode and no adjacent pair that could merge.
    if (!(rank(c) == 1 && c.shape()[0] == 1)) {
      for (index_t k = 0; k < rank(c); ++k) EXPECT_NE(c.shape()[k], 1);
    }
    for (index_t k = 0; k + 1 < rank(c); ++k)
      EXPECT_NE(c.stride()[k], c.shape()[k + 1] * c.stride()[k + 1]);
  }
}

TEST(Coalesce, StaticAndRunTimeArgumentsGiveTheSameAnswer) {
  auto s = coalesce(make_layout(make_shape(Int<2>{}, Int<1>{}, Int<3>{}, Int<4>{}),
                                make_stride(Int<24>{}, Int<5>{}, Int<4>{}, Int<1>{})));
  auto d = coalesce(make_layout(make_shape(2, 1, 3, 4), make_stride(24, 5, 4, 1)));
  EXPECT_EQ(to_vector(s.shape()), to_vector(d.shape()));
  EXPECT_EQ(to_vector(s.stride()), to_vector(d.stride()));
  EXPECT_EQ(to_vector(d.shape()), (std::vector<std::int64_t>{2, 12}));
  EXPECT_EQ(to_vector(d.stride()), (std::vector<std::int64_t>{24, 1}));
}

TEST(RemoveZeroStrides, KeepsOnlyTheNonBroadcastModes) {
  for (auto const& small : test_support::small_layouts(false)) {
    auto l = small.layout();
    auto r = remove_zero_strides(l);
    EXPECT_EQ(cosize(r), cosize(l));
    std::vector<std::int64_t> expect_shape, expect_stride;
    for (std::size_t k = 0; k < small.shape.size(); ++k)
      if (small.stride[k] != 0) {
        expect_shape.push_back(small.shape[k]);
        expect_stride.push_back(small.stride[k]);
      }
    if (expect_shape.empty()) {
      expect_shape = {1};
      expect_stride = {0};
    }
    EXPECT_EQ(to_vector(r.shape()), expect_shape);
    EXPECT_EQ(to_vector(r.stride()), expect_stride);
  }
}

}  // namespace
