// half and bfloat16 are storage types: loaded into float, computed in float, stored back rounded
// to nearest even. Elementwise passes, mixed dtypes, reductions and softmax over them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <tessel/tessel.hpp>

#include "expr/helpers.hpp"

namespace {

using namespace tessel;
using test::elements;
using test::random_tensor;

template <class T>
class StorageFloats : public ::testing::Test {};
using StorageTypes = ::testing::Types<half, bfloat16>;
TYPED_TEST_SUITE(StorageFloats, StorageTypes);

TYPED_TEST(StorageFloats, ElementwiseComputesInFloatAndRoundsOnStore) {
  using T = TypeParam;
  auto x = random_tensor<T>(make_shape(5, 37), -4, 4, 1);
  auto z = random_tensor<T>(make_shape(5, 37), -2, 2, 2);
  auto y = make_host_tensor<T>(make_shape(5, 37));
  y = 0.75f * x + exp(z) * 2.0f;
  for (index_t k = 0; k < 5 * 37; ++k) {
    float const xf = static_cast<float>(x[k]), zf = static_cast<float>(z[k]);
    float const exact = 0.75f * xf + std::exp(zf) * 2.0f;
    float const got = static_cast<float>(y[k]);
    // Float math (Eigen's exp within 2.5 ulp of float) then one rounding to T: the result is
    // T(exact) or, when exact is near a rounding boundary, its neighbour.
    EXPECT_NEAR(got, static_cast<float>(T(exact)),
                std::abs(static_cast<float>(T(exact))) * (std::is_same_v<T, half> ? 1e-3f : 8e-3f))
        << k;
  }
  // Arithmetic only: float results bit for bit, then rounded.
  y = x * z - 1.0f;
  for (index_t k = 0; k < 5 * 37; ++k)
    EXPECT_EQ(y[k].bits, T(static_cast<float>(x[k]) * static_cast<float>(z[k]) - 1.0f).bits) << k;
}

TYPED_TEST(StorageFloats, MixedWithFloatAndEachOther) {
  using T = TypeParam;
  auto x = random_tensor<T>(make_shape(4, 9), -4, 4, 3);
  auto h = random_tensor<half>(make_shape(9), -4, 4, 4);
  auto f = make_host_tensor<float>(make_shape(4, 9));
  f = x + h;  // two storage types: both loaded as float
  for (index_t r = 0; r < 4; ++r)
    for (index_t c = 0; c < 9; ++c)
      EXPECT_EQ(f(r, c), static_cast<float>(x(r, c)) + static_cast<float>(h(c)));
  auto back = make_host_tensor<T>(make_shape(4, 9));
  auto d = random_tensor<double>(make_shape(4, 9), -100, 100, 5);
  back = d;  // double -> T, rounded (through float)
  for (index_t k = 0; k < 36; ++k) EXPECT_EQ(back[k].bits, T(static_cast<float>(d[k])).bits);
  auto strided = make_host_tensor<T>(make_shape(9, 4));
  strided = transpose(x) * 2.0f;  // gathered storage loads
  for (index_t r = 0; r < 9; ++r)
    for (index_t c = 0; c < 4; ++c)
      EXPECT_EQ(strided(r, c).bits, T(static_cast<float>(x(c, r)) * 2.0f).bits);
}

TYPED_TEST(StorageFloats, ReductionsAndSoftmax) {
  using T = TypeParam;
  auto x = random_tensor<T>(make_shape(6, 70), -8, 8, 6);
  auto xs = elements(x);
  static_assert(std::is_same_v<typename decltype(sum(x, mode<1>))::value_type, float>);
  auto s = make_host_tensor<float>(make_shape(6));
  s = sum(x, mode<1>);
  auto l = make_host_tensor<T>(make_shape(6));
  l = logsumexp(x, mode<1>);
  auto p = make_host_tensor<T>(make_shape(6, 70));
  p = softmax(x);
  for (index_t r = 0; r < 6; ++r) {
    double sum = 0, m = -1e300, e = 0;
    for (index_t c = 0; c < 70; ++c) {
      double v = xs[static_cast<std::size_t>(r * 70 + c)];
      sum += v;
      m = std::max(m, v);
    }
    for (index_t c = 0; c < 70; ++c) e += std::exp(xs[static_cast<std::size_t>(r * 70 + c)] - m);
    double const lse = m + std::log(e);
    EXPECT_NEAR(s(r), sum, 1e-4);
    EXPECT_NEAR(static_cast<float>(l(r)), lse, std::abs(lse) * 8e-3);
    for (index_t c = 0; c < 70; ++c) {
      double want = std::exp(xs[static_cast<std::size_t>(r * 70 + c)] - lse);
      EXPECT_NEAR(static_cast<float>(p(r, c)), want, want * 8e-3 + 1e-7);
    }
  }
}

TEST(StorageFloats, NonFiniteValuesSurviveTheRoundTrip) {
  auto x = make_host_tensor<half>(make_shape(4));
  x[0] = half(std::numeric_limits<float>::infinity());
  x[1] = half(-std::numeric_limits<float>::infinity());
  x[2] = half(std::numeric_limits<float>::quiet_NaN());
  x[3] = half(60000.0f);
  auto y = make_host_tensor<half>(make_shape(4));
  y = x * 2.0f;  // 120000 overflows half
  EXPECT_EQ(static_cast<float>(y[0]), std::numeric_limits<float>::infinity());
  EXPECT_EQ(static_cast<float>(y[1]), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(static_cast<float>(y[2])));
  EXPECT_EQ(static_cast<float>(y[3]), std::numeric_limits<float>::infinity());
}

}  // namespace
