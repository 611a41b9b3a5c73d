// Static integers: arithmetic between Ints stays static; mixed arithmetic is run-time except for
// the identities that keep broadcast strides visible.
#include <gtest/gtest.h>

#include <tessel/core/int.hpp>

namespace {

using namespace tessel;
using namespace tessel::literals;

// Arithmetic and comparison between two Ints yield an Int.
static_assert(std::is_empty_v<Int<7>>);
static_assert(std::is_same_v<decltype(Int<6>{} + Int<2>{}), Int<8>>);
static_assert(std::is_same_v<decltype(Int<6>{} - Int<2>{}), Int<4>>);
static_assert(std::is_same_v<decltype(Int<6>{} * Int<2>{}), Int<12>>);
static_assert(std::is_same_v<decltype(Int<7>{} / Int<2>{}), Int<3>>);
static_assert(std::is_same_v<decltype(Int<7>{} % Int<2>{}), Int<1>>);
static_assert(std::is_same_v<decltype(-Int<3>{}), Int<-3>>);
static_assert(std::is_same_v<decltype(Int<2>{} == Int<2>{}), Int<1>>);
static_assert(std::is_same_v<decltype(Int<2>{} != Int<2>{}), Int<0>>);
static_assert(std::is_same_v<decltype(Int<2>{} < Int<3>{}), Int<1>>);
static_assert(std::is_same_v<decltype(Int<2>{} >= Int<3>{}), Int<0>>);
static_assert(Int<2>{} == Int<2>{});
static_assert(!(Int<2>{} > Int<3>{}));

// Mixed arithmetic is run-time, but 0 * x and 1 * x keep what is known statically.
static_assert(std::is_same_v<decltype(Int<3>{} * index_t{2}), index_t>);
static_assert(std::is_same_v<decltype(Int<0>{} * index_t{5}), Int<0>>);
static_assert(std::is_same_v<decltype(index_t{5} * Int<0>{}), Int<0>>);
static_assert(std::is_same_v<decltype(Int<1>{} * index_t{5}), index_t>);
static_assert(std::is_same_v<decltype(index_t{5} + Int<0>{}), index_t>);

// min, max and ceil_div stay static for static arguments.
static_assert(std::is_same_v<decltype(tessel::min(Int<3>{}, Int<5>{})), Int<3>>);
static_assert(std::is_same_v<decltype(tessel::max(Int<3>{}, Int<5>{})), Int<5>>);
static_assert(std::is_same_v<decltype(ceil_div(Int<7>{}, Int<2>{})), Int<4>>);
static_assert(std::is_same_v<decltype(ceil_div(Int<8>{}, Int<2>{})), Int<4>>);
static_assert(ceil_div(index_t{7}, Int<2>{}) == 4);

// Literals and concepts.
static_assert(std::is_same_v<decltype(128_c), Int<128>>);
static_assert(StaticInt<Int<1>> && !StaticInt<int>);
static_assert(DynamicInt<int> && DynamicInt<std::uint8_t> && !DynamicInt<bool>);
static_assert(Integer<Int<4>> && Integer<long> && !Integer<double>);
static_assert(to_index(Int<9>{}) == 9);

// Overflow checks are usable in constant expressions.
static_assert(detail::mul_overflows(index_t{1} << 62, 2));
static_assert(!detail::mul_overflows(index_t{1} << 61, 2));
static_assert(detail::mul_overflows(-(index_t{1} << 62), 3));
static_assert(detail::add_overflows(detail::index_max, 1));
static_assert(detail::sub_overflows(detail::index_min, 1));
static_assert(!detail::mul_overflows(0, detail::index_min));

TEST(Int, ConvertsToItsValueAtRunTime) {
  index_t x = Int<42>{};
  EXPECT_EQ(x, 42);
  EXPECT_EQ(Int<6>{} * index_t{7}, 42);
  EXPECT_EQ(tessel::min(index_t{9}, Int<4>{}), 4);
  EXPECT_EQ(tessel::max(index_t{9}, Int<4>{}), 9);
  EXPECT_EQ(ceil_div(index_t{9}, index_t{4}), 3);
}

TEST(Int, OverflowHelpersAgreeWithWideArithmetic) {
  index_t const values[] = {0,
                            1,
                            -1,
                            2,
                            -2,
                            3037000499,
                            3037000500,
                            -3037000500,
                            detail::index_max,
                            detail::index_min,
                            detail::index_max / 2,
                            detail::index_min / 2};
  for (index_t a : values) {
    for (index_t b : values) {
      __int128 wide = static_cast<__int128>(a) * b;
      bool expect = wide > detail::index_max || wide < detail::index_min;
      EXPECT_EQ(detail::mul_overflows(a, b), expect) << a << " * " << b;
      __int128 sum = static_cast<__int128>(a) + b;
      EXPECT_EQ(detail::add_overflows(a, b), sum > detail::index_max || sum < detail::index_min)
          << a << " + " << b;
      __int128 diff = static_cast<__int128>(a) - b;
      EXPECT_EQ(detail::sub_overflows(a, b), diff > detail::index_max || diff < detail::index_min)
          << a << " - " << b;
    }
  }
}

}  // namespace
