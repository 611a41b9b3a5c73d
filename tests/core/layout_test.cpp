// Layout: construction (compact row-major or explicit strides), evaluation of natural coordinates
// and 1-D indices, queries, and their errors.
#include <gtest/gtest.h>

#include <tessel/core/layout.hpp>

namespace {

using namespace tessel;

// Compact layouts are row-major: the last mode has stride 1.
constexpr auto l23 = make_layout(make_shape(Int<2>{}, Int<3>{}));
static_assert(std::is_empty_v<decltype(l23)>);
static_assert(std::is_same_v<std::remove_cvref_t<decltype(stride(l23))>, tuple<Int<3>, Int<1>>>);
static_assert(decltype(l23(Int<1>{}, Int<2>{}))::value == 5);
static_assert(l23(1, 2) == 5 && l23(0, 1) == 1);
static_assert(l23(4) == 4);  // a 1-D index is row-major
static_assert(std::is_same_v<decltype(size(l23)), Int<6>>);
static_assert(std::is_same_v<decltype(cosize(l23)), Int<6>>);
static_assert(std::is_same_v<decltype(rank(l23)), Int<2>>);
static_assert(std::is_same_v<decltype(depth(l23)), Int<1>>);

// Hierarchical modes: a 1-D index into mode (3, 4) means (i / 4, i % 4).
constexpr auto lh = make_layout(make_shape(Int<2>{}, make_shape(Int<3>{}, Int<4>{})));
static_assert(to_array(flatten(stride(lh))) == std::array<std::int64_t, 3>{12, 4, 1});
static_assert(lh(1, 5) == 12 + 4 + 1);
static_assert(lh(1, make_tuple(1, 1)) == 17);
static_assert(lh(17) == 17);
static_assert(std::is_same_v<decltype(depth(lh)), Int<2>>);
static_assert(std::is_same_v<decltype(size(get<1>(lh))), Int<12>>);
static_assert(get<1>(lh)(5) == 5);

// Explicit strides (column-major here) and cosize.
constexpr auto lc = make_layout(make_shape(Int<2>{}, Int<3>{}), make_stride(Int<1>{}, Int<2>{}));
static_assert(lc(1, 2) == 5 && lc(1, 0) == 1);
constexpr auto lpad = make_layout(make_shape(Int<2>{}, Int<3>{}), make_stride(Int<8>{}, Int<1>{}));
static_assert(std::is_same_v<decltype(cosize(lpad)), Int<11>>);
constexpr auto lbc = make_layout(make_shape(Int<4>{}, Int<3>{}), make_stride(Int<0>{}, Int<1>{}));
static_assert(std::is_same_v<decltype(cosize(lbc)), Int<3>>);
static_assert(
    std::is_same_v<decltype(cosize(make_layout(make_shape(Int<0>{}, Int<3>{})))), Int<0>>);

// Rank 0: one element at offset 0.
constexpr auto l0 = make_layout(make_shape());
static_assert(std::is_same_v<decltype(size(l0)), Int<1>>);
static_assert(std::is_same_v<decltype(cosize(l0)), Int<1>>);
static_assert(l0() == 0);

// Mixed static and run-time extents keep what is static.
static_assert(
    std::is_same_v<std::remove_cvref_t<decltype(stride(make_layout(make_shape(3, Int<4>{}))))>,
                   tuple<Int<4>, Int<1>>>);
static_assert(
    std::is_same_v<std::remove_cvref_t<decltype(stride(make_layout(make_shape(Int<4>{}, 3))))>,
                   tuple<index_t, Int<1>>>);
static_assert(sizeof(make_layout(make_shape(3, Int<4>{}))) == sizeof(index_t));

TEST(Layout, RunTimeCompactLayoutIsRowMajor) {
  auto l = make_layout(make_shape(2, 3, 4));
  EXPECT_EQ(to_vector(stride(l)), (std::vector<std::int64_t>{12, 4, 1}));
  index_t expect = 0;
  for (index_t i = 0; i < 2; ++i)
    for (index_t j = 0; j < 3; ++j)
      for (index_t k = 0; k < 4; ++k) {
        EXPECT_EQ(l(i, j, k), expect);
        EXPECT_EQ(l(expect), expect);
        ++expect;
      }
  EXPECT_EQ(size(l), 24);
  EXPECT_EQ(cosize(l), 24);
}

TEST(Layout, StaticAndRunTimeLayoutsAgreeEverywhere) {
  auto ls = make_layout(make_shape(Int<3>{}, make_shape(Int<2>{}, Int<5>{})),
                        make_stride(Int<1>{}, make_stride(Int<30>{}, Int<3>{})));
  auto ld = make_layout(make_shape(3, make_shape(2, 5)), make_stride(1, make_stride(30, 3)));
  for (index_t i = 0; i < 30; ++i) EXPECT_EQ(ls(i), ld(i)) << i;
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 10; ++j) EXPECT_EQ(ls(i, j), ld(i, j));
  EXPECT_EQ(cosize(ls), cosize(ld));
  EXPECT_EQ(cosize(ld), 1 + 2 * 1 + 1 * 30 + 4 * 3);
}

TEST(Layout, RunTimeRankLayoutEvaluatesOneDimensionalIndices) {
  auto l = make_layout(DynRankTuple<4>{2, 3}, DynRankTuple<4>{1, 2});
  EXPECT_EQ(rank(l), 2);
  // A 1-D index i is the coordinate (i / 3, i % 3).
  EXPECT_EQ(l(1), 2);
  EXPECT_EQ(l(3), 1);
  EXPECT_EQ(l(5), 1 + 4);
  EXPECT_EQ(l(make_tuple(1, 2)), 5);
}

TEST(Layout, CosizeOfEmptyAndBroadcastLayouts) {
  EXPECT_EQ(cosize(make_layout(make_shape(0, 5))), 0);
  EXPECT_EQ(cosize(make_layout(make_shape(4, 5), make_stride(0, 1))), 5);
  EXPECT_EQ(cosize(make_layout(make_shape(4, 5), make_stride(0, 0))), 1);
}

TEST(Layout, CosizeOverflowIsAnError) {
  auto l = make_layout(make_shape(3, 2), make_stride(index_t{1} << 62, 1));
  try {
    (void)cosize(l);
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "the cosize of layout (3,2):(4611686018427387904,1) overflows int64.");
  }
}

TEST(Layout, NegativeStridesAndMismatchedRanksAreErrors) {
  try {
    make_layout(make_shape(2, 3), make_stride(-1, 1));
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "stride (-1,1) has a negative entry; tessel strides must be >= 0.");
  }
  try {
    make_layout(DynRankTuple<3>{2, 3}, DynRankTuple<3>{1});
    FAIL();
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "shape (2,3) has rank 2 but stride (1) has rank 1.");
  }
  EXPECT_THROW(make_layout(make_shape(2, -3)), Error);
}

TEST(Layout, EqualityIsByValue) {
  EXPECT_TRUE(make_layout(make_shape(Int<2>{}, 3)) == make_layout(make_shape(2, 3)));
  EXPECT_FALSE(make_layout(make_shape(2, 3)) == make_layout(make_shape(3, 2)));
}

}  // namespace
