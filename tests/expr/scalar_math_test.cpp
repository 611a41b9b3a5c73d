// The scalar functions behind the elementwise operators: abs clears the sign bit of a float (no
// branch on the sign), keeps NaN a NaN and -0 a +0, and leaves integers' arithmetic as C++'s.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include <tessel/expr/scalar_math.hpp>

namespace {

using namespace tessel;

static_assert(math::abs(-2.5f) == 2.5f && math::abs(3.0) == 3.0 && math::abs(-7) == 7);
static_assert(math::abs(std::uint8_t{200}) == 200);

template <class T>
void expect_float_abs() {
  T const inf = std::numeric_limits<T>::infinity();
  EXPECT_EQ(math::abs(T(-1.25)), T(1.25));
  EXPECT_EQ(math::abs(-inf), inf);
  EXPECT_EQ(math::abs(std::numeric_limits<T>::lowest()), std::numeric_limits<T>::max());
  EXPECT_FALSE(std::signbit(math::abs(T(-0.0))));
  T const nan = std::numeric_limits<T>::quiet_NaN();
  EXPECT_TRUE(std::isnan(math::abs(nan)));
  EXPECT_TRUE(std::isnan(math::abs(-nan)));
  EXPECT_FALSE(std::signbit(math::abs(-nan)));
  EXPECT_EQ(math::abs(-std::numeric_limits<T>::denorm_min()), std::numeric_limits<T>::denorm_min());
}

TEST(ScalarMath, AbsClearsTheSignBitOfFloats) {
  expect_float_abs<float>();
  expect_float_abs<double>();
}

}  // namespace
