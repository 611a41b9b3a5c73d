// IntTuple queries: rank, depth, size (with overflow), flatten, conversions, comparison, text.
#include <gtest/gtest.h>

#include <tessel/core/int_tuple.hpp>
#include <tessel/core/shape.hpp>

namespace {

using namespace tessel;

constexpr auto s_static = make_shape(Int<2>{}, make_shape(Int<3>{}, Int<4>{}));

// rank / depth / size are static for static arguments.
static_assert(std::is_same_v<decltype(rank(s_static)), Int<2>>);
static_assert(std::is_same_v<decltype(rank(Int<5>{})), Int<1>>);
static_assert(std::is_same_v<decltype(rank(make_shape())), Int<0>>);
static_assert(std::is_same_v<decltype(depth(s_static)), Int<2>>);
static_assert(std::is_same_v<decltype(depth(Int<5>{})), Int<0>>);
static_assert(std::is_same_v<decltype(depth(make_shape(Int<5>{}))), Int<1>>);
static_assert(std::is_same_v<decltype(size(s_static)), Int<24>>);
static_assert(std::is_same_v<decltype(size(make_shape())), Int<1>>);
static_assert(std::is_same_v<decltype(size(make_shape(Int<0>{}, Int<7>{}))), Int<0>>);
static_assert(std::is_same_v<decltype(product_each(s_static)), tuple<Int<2>, Int<12>>>);
static_assert(std::is_same_v<decltype(flatten(s_static)), tuple<Int<2>, Int<3>, Int<4>>>);
static_assert(is_static_v<decltype(s_static)> && !is_static_v<decltype(make_shape(2, Int<3>{}))>);

// to_array is a constant expression for static tuples.
static_assert(to_array(flatten(s_static)) == std::array<std::int64_t, 3>{2, 3, 4});
static_assert(to_array(Int<5>{}) == std::array<std::int64_t, 1>{5});
static_assert(to_array(make_shape()).empty());

// get on an integer is the integer itself.
static_assert(get<0>(Int<9>{}) == 9);

// Structure comparison.
static_assert(congruent(s_static, make_shape(1, make_shape(1, 1))));
static_assert(!congruent(s_static, make_shape(1, 1, 1)));
static_assert(equal(s_static, make_shape(2, make_shape(3, 4))));
static_assert(!equal(s_static, make_shape(2, make_shape(4, 3))));

TEST(IntTuple, SizeOfRunTimeShapes) {
  EXPECT_EQ(size(make_shape(2, 3, 4)), 24);
  EXPECT_EQ(size(make_shape(2, make_shape(Int<3>{}, 5))), 30);
  EXPECT_EQ(size(make_shape(0, 7)), 0);
  EXPECT_EQ(size(make_shape(1, 1, 1)), 1);
  EXPECT_EQ(rank(DynRankTuple<4>{2, 3}), 2);
  EXPECT_EQ(size(DynRankTuple<4>{2, 3, 5}), 30);
}

TEST(IntTuple, SizeOverflowIsAnErrorNamingTheShape) {
  auto huge = make_shape(index_t{1} << 32, index_t{1} << 32);
  try {
    (void)size(huge);
    FAIL() << "expected tessel::Error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "the size of shape (4294967296,4294967296) overflows int64.");
  }
  // A zero extent makes the product 0, whatever the other extents are.
  EXPECT_EQ(size(make_shape(index_t{1} << 40, index_t{1} << 40, 0)), 0);
}

TEST(IntTuple, NegativeExtentIsAnError) {
  EXPECT_THROW(make_shape(3, -1), Error);
  try {
    make_shape(4, -3);
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "shape (4,-3) has a negative extent; extents must be >= 0.");
  }
  EXPECT_THROW(make_stride(1, -2), Error);
}

TEST(IntTuple, ToVectorAcceptsRunTimeRank) {
  EXPECT_EQ(to_vector(make_shape(5, Int<3>{})), (std::vector<std::int64_t>{5, 3}));
  EXPECT_EQ(to_vector(DynRankTuple<6>{7, 8, 9}), (std::vector<std::int64_t>{7, 8, 9}));
  EXPECT_TRUE(to_vector(make_shape()).empty());
  EXPECT_EQ(to_vector(index_t{4}), (std::vector<std::int64_t>{4}));
}

TEST(IntTuple, FlattenWithARunTimeRankModeIsRunTimeRank) {
  auto nested = make_tuple(index_t{2}, DynRankTuple<3>{3, 4});
  auto flat = flatten(nested);
  static_assert(std::is_same_v<decltype(flat), DynRankTuple<4>>);
  EXPECT_EQ(to_vector(flat), (std::vector<std::int64_t>{2, 3, 4}));
}

TEST(IntTuple, TextMarksStaticIntegers) {
  EXPECT_EQ(to_string(make_shape(Int<2>{}, 4)), "(_2,4)");
  EXPECT_EQ(to_string(make_shape(Int<2>{}, make_shape(3, Int<4>{}))), "(_2,(3,_4))");
  EXPECT_EQ(to_string(make_shape()), "()");
  EXPECT_EQ(to_string(Int<7>{}), "_7");
  EXPECT_EQ(to_string(DynRankTuple<3>{1, 2}), "(1,2)");
}

TEST(IntTuple, RunTimeAndStaticComparisonAgree) {
  EXPECT_TRUE(equal(DynRankTuple<3>{2, 3}, make_shape(Int<2>{}, 3)));
  EXPECT_FALSE(equal(DynRankTuple<3>{2, 3, 1}, make_shape(Int<2>{}, 3)));
  EXPECT_TRUE((DynRankTuple<3>{2, 3} == make_shape(2, 3)));
}

}  // namespace
