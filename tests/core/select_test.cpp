// select / permute / flatten of layouts: mode rearrangements that keep every static integer.
#include <gtest/gtest.h>

#include <tessel/core/select.hpp>

namespace {

using namespace tessel;

constexpr auto l = make_layout(make_shape(Int<2>{}, Int<3>{}, Int<4>{}));
static_assert(
    std::is_same_v<decltype(permute<2, 0, 1>(l)),
                   Layout<tuple<Int<4>, Int<2>, Int<3>>, tuple<Int<1>, Int<12>, Int<4>>>>);
static_assert(std::is_same_v<decltype(select<1>(l)), Layout<tuple<Int<3>>, tuple<Int<4>>>>);
static_assert(permute<1, 0>(make_layout(make_shape(Int<2>{}, Int<3>{})))(2, 1) == 5);

constexpr auto h = make_layout(make_shape(Int<2>{}, make_shape(Int<3>{}, Int<4>{})));
static_assert(
    std::is_same_v<decltype(flatten(h)),
                   Layout<tuple<Int<2>, Int<3>, Int<4>>, tuple<Int<12>, Int<4>, Int<1>>>>);

TEST(Select, PermuteKeepsElementAddresses) {
  auto a = make_layout(make_shape(2, Int<3>{}, 4));
  auto p = permute<2, 0, 1>(a);
  static_assert(std::is_same_v<std::remove_cvref_t<decltype(get<2>(p.shape()))>, Int<3>>);
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 4; ++k) EXPECT_EQ(p(k, i, j), a(i, j, k));
}

TEST(Select, FlattenKeepsOneDimensionalIndices) {
  auto a = make_layout(make_shape(3, make_shape(2, Int<5>{})),
                       make_stride(1, make_stride(30, Int<3>{})));
  auto f = flatten(a);
  EXPECT_EQ(rank(f), Int<3>{});
  for (index_t i = 0; i < 30; ++i) EXPECT_EQ(f(i), a(i));
}

}  // namespace
