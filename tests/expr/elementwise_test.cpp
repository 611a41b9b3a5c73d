// Elementwise expressions: every operator against a reference loop (on the packet path and the
// scalar path), NumPy broadcasting, scalars of every arithmetic type, type promotion, and the
// errors for shapes that do not broadcast.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>

#include <tessel/tessel.hpp>

#include "expr/helpers.hpp"

namespace {

using namespace tessel;
using test::elements;
using test::random_tensor;

using F = float;
template <class X>
using value_of = typename decltype(as_expr(std::declval<X&>()))::value_type;
using FT = decltype(make_host_tensor<float>(make_shape(1)));
using DT = decltype(make_host_tensor<double>(make_shape(1)));
using IT = decltype(make_host_tensor<int>(make_shape(1)));
using I8T = decltype(make_host_tensor<std::int8_t>(make_shape(1)));
using BT = decltype(make_host_tensor<bool>(make_shape(1)));
using HT = decltype(make_host_tensor<half>(make_shape(1)));

// Promotion: C++'s usual conversions, but a scalar does not widen an array and bool adopts the
// other type.
static_assert(std::is_same_v<value_of<decltype(std::declval<FT&>() + std::declval<FT&>())>, float>);
static_assert(std::is_same_v<value_of<decltype(std::declval<FT&>() * 2.0)>, float>);
static_assert(std::is_same_v<value_of<decltype(2 * std::declval<DT&>())>, double>);
static_assert(std::is_same_v<value_of<decltype(std::declval<IT&>() * 2.5)>, double>);
static_assert(std::is_same_v<value_of<decltype(std::declval<IT&>() * 2.5f)>, float>);
static_assert(std::is_same_v<value_of<decltype(std::declval<IT&>() + std::declval<FT&>())>, float>);
// Equal types stay (int8 + int8 is int8, as in PyTorch; it wraps like the stored result would).
static_assert(
    std::is_same_v<value_of<decltype(std::declval<I8T&>() + std::declval<I8T&>())>, std::int8_t>);
static_assert(std::is_same_v<value_of<decltype(std::declval<BT&>() * std::declval<FT&>())>, float>);
static_assert(std::is_same_v<value_of<decltype(std::declval<HT&>() + std::declval<HT&>())>, float>);
static_assert(std::is_same_v<value_of<decltype(std::declval<FT&>() < 1)>, bool>);
static_assert(std::is_same_v<value_of<decltype(exp(std::declval<IT&>()))>, double>);
static_assert(std::is_same_v<value_of<decltype(exp(std::declval<HT&>()))>, float>);
static_assert(std::is_same_v<value_of<decltype(cast<half>(std::declval<DT&>()))>, float>);
static_assert(std::is_same_v<value_of<decltype(cast<int>(std::declval<FT&>()))>, int>);
// Expressions are rank-typed; leaves hold views.
static_assert(decltype(std::declval<FT&>() + 1.0f)::rank == 1);
static_assert(Expression<decltype(exp(std::declval<FT&>()))>);
static_assert(!Expression<FT>);

// Applies `expr` (built from x and y) with the executor and compares with `ref` per element.
template <class Dst, class Ref>
void expect_elements(Dst const& dst, Ref const& ref, double tol) {
  auto got = elements(dst);
  for (std::size_t i = 0; i < got.size(); ++i) {
    double const want = ref(static_cast<index_t>(i));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    } else {
      EXPECT_NEAR(got[i], want, tol * std::max(1.0, std::abs(want))) << "element " << i;
    }
  }
}

// Shapes that exercise full packets, tails and odometer steps.
auto shape_a() {
  return make_shape(5, 37);
}

TEST(Elementwise, ArithmeticMatchesAReferenceLoop) {
  auto x = random_tensor<float>(shape_a(), -3, 3, 1);
  auto y = random_tensor<float>(shape_a(), 0.5, 4, 2);
  auto out = make_host_tensor<float>(shape_a());
  auto xs = elements(x), ys = elements(y);
  auto at = [](auto const& v, index_t i) { return v[static_cast<std::size_t>(i)]; };
  out = x + y;
  expect_elements(
      out, [&](index_t i) { return F(at(xs, i)) + F(at(ys, i)); }, 1e-7);
  out = x - y;
  expect_elements(
      out, [&](index_t i) { return F(at(xs, i)) - F(at(ys, i)); }, 1e-7);
  out = x * y;
  expect_elements(
      out, [&](index_t i) { return F(at(xs, i)) * F(at(ys, i)); }, 1e-7);
  out = x / y;
  expect_elements(
      out, [&](index_t i) { return F(at(xs, i)) / F(at(ys, i)); }, 1e-7);
  out = -x;
  expect_elements(
      out, [&](index_t i) { return -at(xs, i); }, 0);
  out = 2.0f * x - y / 4 + 1;
  expect_elements(
      out, [&](index_t i) { return 2.0 * at(xs, i) - at(ys, i) / 4 + 1; }, 1e-6);
}

TEST(Elementwise, MathFunctionsMatchFloat64) {
  auto x = random_tensor<float>(shape_a(), -5, 5, 3);
  auto p = random_tensor<float>(shape_a(), 1e-3, 50, 4);
  auto out = make_host_tensor<float>(shape_a());
  auto xs = elements(x), ps = elements(p);
  auto at = [](auto const& v, index_t i) { return v[static_cast<std::size_t>(i)]; };
  out = exp(x);
  // Eigen's packet exp is within 2.5 ulp of the correctly rounded value.
  expect_elements(
      out, [&](index_t i) { return std::exp(at(xs, i)); }, 3e-7);
  out = log(p);
  expect_elements(
      out, [&](index_t i) { return std::log(at(ps, i)); }, 2e-7);
  out = tanh(x);
  expect_elements(
      out, [&](index_t i) { return std::tanh(at(xs, i)); }, 2e-6);
  out = sqrt(p);
  expect_elements(
      out, [&](index_t i) { return std::sqrt(at(ps, i)); }, 1e-7);
  out = pow(p, -0.3);  // in float: powf is within 1 ulp
  expect_elements(
      out, [&](index_t i) { return std::pow(at(ps, i), -0.3); }, 2e-7);
  out = pow(p, 0.5);
  expect_elements(
      out, [&](index_t i) { return std::sqrt(at(ps, i)); }, 1e-7);
  out = abs(x);
  expect_elements(
      out, [&](index_t i) { return std::abs(at(xs, i)); }, 0);
  out = sign(x);
  expect_elements(
      out, [&](index_t i) { return at(xs, i) > 0 ? 1.0 : (at(xs, i) < 0 ? -1.0 : 0.0); }, 0);
}

TEST(Elementwise, SignKeepsSignedZerosAndNaN) {
  auto x = make_host_tensor<double>(make_shape(5));
  double const values[] = {-2.5, -0.0, 0.0, 3.0, std::nan("")};
  for (index_t i = 0; i < 5; ++i) x(i) = values[i];
  auto out = make_host_tensor<double>(make_shape(5));
  out = sign(x);
  EXPECT_EQ(out(0), -1.0);
  EXPECT_TRUE(out(1) == 0.0 && std::signbit(out(1)));
  EXPECT_TRUE(out(2) == 0.0 && !std::signbit(out(2)));
  EXPECT_EQ(out(3), 1.0);
  EXPECT_TRUE(std::isnan(out(4)));
}

TEST(Elementwise, MathOnDoubleAndIntegerOperands) {
  auto x = random_tensor<double>(make_shape(3, 9), -4, 4, 5);
  auto out = make_host_tensor<double>(make_shape(3, 9));
  auto xs = elements(x);
  out = tanh(x) + exp(x) * abs(x);
  expect_elements(
      out,
      [&](index_t i) {
        double v = xs[static_cast<std::size_t>(i)];
        return std::tanh(v) + std::exp(v) * std::abs(v);
      },
      1e-13);
  auto n = random_tensor<int>(make_shape(4, 6), -20, 20, 6);
  auto ns = elements(n);
  auto r = make_host_tensor<double>(make_shape(4, 6));
  r = exp(n * 0.1) + sqrt(abs(n)) + pow(abs(n), 1.5);  // integers compute in double
  expect_elements(
      r,
      [&](index_t i) {
        double v = ns[static_cast<std::size_t>(i)];
        return std::exp(v * 0.1) + std::sqrt(std::abs(v)) + std::pow(std::abs(v), 1.5);
      },
      1e-14);
  auto q = make_host_tensor<int>(make_shape(4, 6));
  q = n / 3 + abs(n);  // C++ integer division
  expect_elements(
      q,
      [&](index_t i) {
        int v = static_cast<int>(ns[static_cast<std::size_t>(i)]);
        return double(v / 3 + (v < 0 ? -v : v));
      },
      0);
}

TEST(Elementwise, MaxMinPropagateNaN) {
  constexpr float nan = std::numeric_limits<float>::quiet_NaN();
  auto a = make_host_tensor<float>(make_shape(9));
  auto b = make_host_tensor<float>(make_shape(9));
  float av[9] = {1, 5, nan, -2, 0, 3, 7, nan, -1};
  float bv[9] = {2, 4, 1, nan, 0, 3, -7, nan, -3};
  for (int i = 0; i < 9; ++i) {
    a[i] = av[i];
    b[i] = bv[i];
  }
  auto out = make_host_tensor<float>(make_shape(9));
  out = max(a, b);
  expect_elements(
      out,
      [&](index_t i) {
        return std::isnan(av[i]) || std::isnan(bv[i]) ? double(nan) : std::max(av[i], bv[i]);
      },
      0);
  out = min(a, b);
  expect_elements(
      out,
      [&](index_t i) {
        return std::isnan(av[i]) || std::isnan(bv[i]) ? double(nan) : std::min(av[i], bv[i]);
      },
      0);
  out = max(a, 0.0f);  // relu with a scalar
  expect_elements(
      out, [&](index_t i) { return std::isnan(av[i]) ? double(nan) : std::max(av[i], 0.f); }, 0);
}

TEST(Elementwise, ComparisonsGiveBooleansAndWhereSelects) {
  auto x = random_tensor<float>(shape_a(), -2, 2, 7);
  auto y = random_tensor<float>(shape_a(), -2, 2, 8);
  x[3] = y[3];
  auto xs = elements(x), ys = elements(y);
  auto m = make_host_tensor<bool>(shape_a());
  auto check = [&](auto cmp) {
    for (std::size_t i = 0; i < xs.size(); ++i)
      EXPECT_EQ(m[static_cast<index_t>(i)], cmp(xs[i], ys[i])) << i;
  };
  m = x < y;
  check(std::less<double>{});
  m = x <= y;
  check(std::less_equal<double>{});
  m = x > y;
  check(std::greater<double>{});
  m = x >= y;
  check(std::greater_equal<double>{});
  m = x == y;
  check(std::equal_to<double>{});
  m = x != y;
  check(std::not_equal_to<double>{});
  auto out = make_host_tensor<float>(shape_a());
  out = where(x > 0.5f, x, y * 2);
  expect_elements(
      out,
      [&](index_t i) {
        auto k = static_cast<std::size_t>(i);
        return xs[k] > 0.5 ? xs[k] : F(ys[k]) * 2;
      },
      0);
  out = where(m, 1.0f, x);  // a boolean tensor as the condition, a scalar branch
  expect_elements(
      out,
      [&](index_t i) {
        auto k = static_cast<std::size_t>(i);
        return xs[k] != ys[k] ? 1.0 : xs[k];
      },
      0);
  out = (x > 0) * x;  // a mask times a float is a float
  expect_elements(
      out, [&](index_t i) { return std::max(0.0, xs[static_cast<std::size_t>(i)]); }, 0);
}

TEST(Elementwise, CastConvertsEachElement) {
  auto x = random_tensor<float>(make_shape(4, 5), -10, 10, 9);
  auto xs = elements(x);
  auto n = make_host_tensor<int>(make_shape(4, 5));
  n = cast<int>(x);
  for (std::size_t i = 0; i < xs.size(); ++i)
    EXPECT_EQ(n[static_cast<index_t>(i)], static_cast<int>(float(xs[i])));
  auto out = make_host_tensor<float>(make_shape(4, 5));
  out = cast<half>(x) * 1.0f;  // rounded to half inside the expression
  for (std::size_t i = 0; i < xs.size(); ++i)
    EXPECT_EQ(out[static_cast<index_t>(i)], static_cast<float>(half(float(xs[i]))));
  out = cast<bfloat16>(x);
  for (std::size_t i = 0; i < xs.size(); ++i)
    EXPECT_EQ(out[static_cast<index_t>(i)], static_cast<float>(bfloat16(float(xs[i]))));
}

TEST(Elementwise, ScalarsOfEveryArithmeticType) {
  auto x = random_tensor<float>(make_shape(6), -1, 1, 10);
  auto xs = elements(x);
  auto out = make_host_tensor<float>(make_shape(6));
  auto expect = [&](double add) {
    expect_elements(
        out, [&](index_t i) { return F(xs[static_cast<std::size_t>(i)]) + F(add); }, 1e-7);
  };
  out = x + std::int8_t{3};
  expect(3);
  out = x + std::uint16_t{4};
  expect(4);
  out = x + 5u;
  expect(5);
  out = x + 6LL;
  expect(6);
  out = x + 0.25;
  expect(0.25);
  out = x + half(0.5f);
  expect(0.5);
  out = x + true;
  expect(1);
  out = 7.0f;  // a scalar fills
  for (index_t i = 0; i < 6; ++i) EXPECT_EQ(out[i], 7.0f);
}

TEST(Elementwise, UserFunctorsMap) {
  auto x = random_tensor<float>(make_shape(3, 4), -1, 1, 11);
  auto y = random_tensor<float>(make_shape(4), -1, 1, 12);
  auto xs = elements(x), ys = elements(y);
  auto out = make_host_tensor<float>(make_shape(3, 4));
  struct Fma {
    float operator()(float a, float b) const { return a * b + 1.0f; }
  };
  out = map(Fma{}, x, y);
  expect_elements(
      out,
      [&](index_t i) {
        return F(xs[static_cast<std::size_t>(i)]) * F(ys[static_cast<std::size_t>(i % 4)]) + 1.0f;
      },
      1e-7);
}

TEST(Broadcasting, FollowsNumPyRules) {
  auto col = random_tensor<float>(make_shape(3, 1), -1, 1, 13);
  auto row = random_tensor<float>(make_shape(4), -1, 1, 14);
  auto cube = random_tensor<float>(make_shape(2, 3, 4), -1, 1, 15);
  auto cs = elements(col), rs = elements(row), qs = elements(cube);
  auto e = col + row;
  EXPECT_EQ(e.shape(), (ExprShape<2>{3, 4}));
  auto out = make_host_tensor<float>(make_shape(3, 4));
  out = col + row;
  expect_elements(
      out,
      [&](index_t i) {
        return F(cs[static_cast<std::size_t>(i / 4)]) + F(rs[static_cast<std::size_t>(i % 4)]);
      },
      0);
  auto out3 = make_host_tensor<float>(make_shape(2, 3, 4));
  out3 = cube * col - row;
  std::vector<index_t> s3 = {2, 3, 4};
  expect_elements(
      out3,
      [&](index_t i) {
        auto c = test::unravel(i, s3);
        auto at = [](auto const& v, index_t k) { return F(v[static_cast<std::size_t>(k)]); };
        return at(qs, i) * at(cs, test::broadcast_index(c, {3, 1})) -
               at(rs, test::broadcast_index(c, {4}));
      },
      1e-7);
  // Assignment broadcasts the expression to the destination.
  out3 = row * 2.0f;
  expect_elements(
      out3, [&](index_t i) { return 2.0f * F(rs[static_cast<std::size_t>(i % 4)]); }, 0);
}

TEST(Broadcasting, MismatchNamesBothShapes) {
  auto a = make_host_tensor<float>(make_shape(3, 4));
  auto b = make_host_tensor<float>(make_shape(5, 4));
  try {
    (void)(a + b);
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "cannot broadcast shape (3,4) with shape (5,4).");
  }
  auto c = make_host_tensor<float>(make_shape(2, 4, 1));
  try {
    (void)where(a > 0, c, 1.0f);
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "cannot broadcast shape (3,4) with shape (2,4,1).");
  }
}

TEST(Broadcasting, AssignmentMismatchLeavesTheDestinationUntouched) {
  auto dst = make_host_tensor<float>(make_shape(3, 4));
  for (index_t i = 0; i < 12; ++i) dst[i] = float(i);
  auto src = make_host_tensor<float>(make_shape(5, 4));
  try {
    dst = src * 2.0f;
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot assign an expression of shape (5,4) to a tensor of shape (3,4).");
  }
  auto wide = make_host_tensor<float>(make_shape(2, 3, 4));
  try {
    dst = wide;  // the expression may not have more modes than the destination
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot assign an expression of shape (2,3,4) to a tensor of shape (3,4).");
  }
  for (index_t i = 0; i < 12; ++i) EXPECT_EQ(dst[i], float(i));
}

TEST(Elementwise, OwningTensorsAssignByValue) {
  auto a = random_tensor<float>(make_shape(2, 3), -1, 1, 16);
  auto b = make_host_tensor<float>(make_shape(2, 3));
  b = a;  // copies the elements; b keeps its own storage
  float* const storage = b.data();
  EXPECT_EQ(elements(b), elements(a));
  a(0, 0) = 42.0f;
  EXPECT_NE(b(0, 0), 42.0f);
  EXPECT_EQ(b.data(), storage);
}

}  // namespace
