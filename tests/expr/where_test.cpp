// where's select is a bit select, not a branch (a branch on a data-dependent condition such as a
// pruning mask mispredicts half the time): the chosen operand comes out bit for bit, a NaN or a
// -0.0 in it included, and the other one never leaks, for every element width.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <tessel/expr/where.hpp>

namespace {

using namespace tessel;

static_assert(ops::Where{}(false, 1, 2) == 2 && ops::Where{}(1, 2.5, 3) == 2.5);

template <class T>
void expect_where_selects(T a, T b) {
  ops::Where const w;
  auto const same = [](T x, T y) { return std::memcmp(&x, &y, sizeof(T)) == 0; };
  EXPECT_TRUE(same(w(true, a, b), a));
  EXPECT_TRUE(same(w(false, a, b), b));
  EXPECT_TRUE(same(w(7, a, b), a));  // any non-zero condition
  EXPECT_TRUE(same(w(0.0f, a, b), b));
}

TEST(WhereOp, SelectsTheOperandBitForBit) {
  expect_where_selects<float>(std::nanf(""), -0.0f);
  expect_where_selects<double>(-0.0, std::numeric_limits<double>::infinity());
  expect_where_selects<std::int8_t>(-128, 127);
  expect_where_selects<std::uint16_t>(65535, 1);
  expect_where_selects<std::int64_t>(std::numeric_limits<std::int64_t>::min(), -1);
  EXPECT_EQ(ops::Where{}(true, false, true), false);
}

}  // namespace
