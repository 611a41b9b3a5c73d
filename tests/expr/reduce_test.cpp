// Reductions and row operations: every reduction with keep / drop and over every mode, on
// contiguous, strided, transposed, broadcast and hierarchical inputs, against float64 references;
// logsumexp stability; softmax; compositions with reductions inside elementwise expressions; and
// the errors for empty modes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <tessel/tessel.hpp>

#include "expr/helpers.hpp"

namespace {

using namespace tessel;
using test::elements;
using test::make_like;
using test::random_tensor;

constexpr double inf = std::numeric_limits<double>::infinity();

// ---- a float64 reference ----

enum class K { sum, max, min, mean, argmax, lse };

double reduce_ref(K k, std::vector<double> const& v) {
  double const n = static_cast<double>(v.size());
  switch (k) {
    case K::sum: {
      double s = 0;
      for (double x : v) s += x;
      return s;
    }
    case K::mean: {
      double s = 0;
      for (double x : v) s += x;
      return s / n;
    }
    case K::max: {
      double m = -inf;
      for (double x : v) m = std::isnan(x) || std::isnan(m) ? NAN : std::max(m, x);
      return m;
    }
    case K::min: {
      double m = inf;
      for (double x : v) m = std::isnan(x) || std::isnan(m) ? NAN : std::min(m, x);
      return m;
    }
    case K::argmax: {
      std::size_t best = 0;
      for (std::size_t i = 1; i < v.size(); ++i)
        if (v[i] > v[best]) best = i;
      return static_cast<double>(best);
    }
    case K::lse: {
      double m = -inf;
      for (double x : v) m = std::max(m, x);
      if (!std::isfinite(m)) return m;
      double s = 0;
      for (double x : v) s += std::exp(x - m);
      return m + std::log(s);
    }
  }
  return 0;
}

// Reference of reduction k over mode `axis` (or every mode when axis < 0) of x with `shape`,
// in row-major order of the result.
std::vector<double> reduce_ref(K k, std::vector<double> const& x, std::vector<index_t> const& shape,
                               int axis) {
  if (axis < 0) return {reduce_ref(k, x)};
  std::vector<index_t> out_shape = shape;
  out_shape[static_cast<std::size_t>(axis)] = 1;
  std::vector<std::vector<double>> groups(static_cast<std::size_t>(test::product(out_shape)));
  for (index_t i = 0; i < static_cast<index_t>(x.size()); ++i) {
    auto c = test::unravel(i, shape);
    c[static_cast<std::size_t>(axis)] = 0;
    groups[static_cast<std::size_t>(test::broadcast_index(c, out_shape))].push_back(
        x[static_cast<std::size_t>(i)]);
  }
  std::vector<double> out;
  for (auto const& g : groups) out.push_back(reduce_ref(k, g));
  return out;
}

template <K k, class X, class... Args>
auto reduce_expr(X const& x, Args... args) {
  if constexpr (k == K::sum) return sum(x, args...);
  if constexpr (k == K::max) return max(x, args...);
  if constexpr (k == K::min) return min(x, args...);
  if constexpr (k == K::mean) return mean(x, args...);
  if constexpr (k == K::argmax) return argmax(x, args...);
  if constexpr (k == K::lse) return logsumexp(x, args...);
}

void expect_close(std::vector<double> const& got, std::vector<double> const& want, double tol,
                  std::string const& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << " element " << i;
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << " element " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i])))
          << what << " element " << i;
    }
  }
}

// Checks reduction k of x over mode 0, mode 1, mode<-1> and every mode, kept and dropped.
template <K k, class X>
void check_all_forms(X const& x, std::string const& what) {
  auto const xs = elements(x);
  auto const s = detail::logical_shape(x);
  std::vector<index_t> shape(s.begin(), s.end());
  double const tol = k == K::sum ? 1e-5 : 2e-6;
  auto run = [&](auto e, int axis, std::string const& form) {
    auto dst = make_like(e);
    dst = e;
    expect_close(elements(dst), reduce_ref(k, xs, shape, axis), tol, what + " " + form);
  };
  run(reduce_expr<k>(x, mode<0>), 0, "mode 0");
  run(reduce_expr<k>(x, mode<1>, keep), 1, "mode 1 keep");
  run(reduce_expr<k>(x, mode<-1>, drop), 1, "mode -1 drop");
  run(reduce_expr<k>(x, mode<0>, keep), 0, "mode 0 keep");
  run(reduce_expr<k>(x), -1, "all");
  run(reduce_expr<k>(x, keep), -1, "all keep");
  static_assert(decltype(reduce_expr<k>(x, mode<0>))::rank == 1);
  static_assert(decltype(reduce_expr<k>(x, mode<0>, keep))::rank == 2);
  static_assert(decltype(reduce_expr<k>(x))::rank == 0);
}

template <class X>
void check_every_reduction(X const& x, std::string const& what) {
  check_all_forms<K::sum>(x, what + " sum");
  check_all_forms<K::max>(x, what + " max");
  check_all_forms<K::min>(x, what + " min");
  check_all_forms<K::mean>(x, what + " mean");
  check_all_forms<K::argmax>(x, what + " argmax");
  check_all_forms<K::lse>(x, what + " logsumexp");
}

TEST(Reductions, EveryKindOnAContiguousInput) {
  auto x = random_tensor<float>(make_shape(5, 37), -4, 4, 1);
  check_every_reduction(x, "contiguous");
}

TEST(Reductions, EveryKindOnStridedAndTransposedInputs) {
  auto big = random_tensor<float>(make_shape(7, 45), -4, 4, 2);
  check_every_reduction(big(range(1, 6), range(3, 40)), "strided");
  auto t = random_tensor<float>(make_shape(37, 5), -4, 4, 3);
  check_every_reduction(transpose(t), "transposed");
  auto d = random_tensor<double>(make_shape(6, 9), -4, 4, 4);
  check_every_reduction(transpose(d), "double transposed");
}

TEST(Reductions, EveryKindOnABroadcastInput) {
  // Mode 0 repeats one row: argmax over it is a tie everywhere and must report index 0.
  auto row = random_tensor<float>(make_shape(37), -4, 4, 5);
  check_every_reduction(broadcast_to(row, make_shape(5, 37)), "broadcast");
  auto grid = random_tensor<float>(make_shape(2, 3), -4, 4, 6);
  check_every_reduction(broadcast_block_to_element(grid, make_shape(3, 4)), "block broadcast");
}

TEST(Reductions, EveryKindOnAnExpression) {
  auto x = random_tensor<float>(make_shape(4, 33), -2, 2, 7);
  auto y = random_tensor<float>(make_shape(33), -2, 2, 8);
  auto e = x * y + 1.0f;
  auto z = make_like(e);
  z = e;
  auto const zs = elements(z);
  auto s = make_host_tensor<float>(make_shape(4));
  s = sum(x * y + 1.0f, mode<1>);
  expect_close(elements(s), reduce_ref(K::sum, zs, {4, 33}, 1), 1e-5, "sum of x * y + 1");
  s = logsumexp(x * y + 1.0f, mode<1>);
  expect_close(elements(s), reduce_ref(K::lse, zs, {4, 33}, 1), 1e-6, "lse of x * y + 1");
}

TEST(Reductions, OverAHierarchicalModeReducesEachBlock) {
  auto x = random_tensor<float>(make_shape(4, 6), -3, 3, 9);
  auto blocks = block_view(x, make_shape(2, 3), BlockOrder::merged);  // (2,2,(2,3))
  auto sums = make_host_tensor<float>(make_shape(2, 2));
  sums = sum(blocks, mode<2>);
  auto where = make_host_tensor<index_t>(make_shape(2, 2));
  where = argmax(blocks, mode<2>);
  for (index_t bi = 0; bi < 2; ++bi)
    for (index_t bj = 0; bj < 2; ++bj) {
      double s = 0;
      index_t best = 0;
      for (index_t k = 0; k < 6; ++k) {
        float v = x(bi * 2 + k / 3, bj * 3 + k % 3);
        s += v;
        if (v > x(bi * 2 + best / 3, bj * 3 + best % 3)) best = k;
      }
      EXPECT_NEAR(sums(bi, bj), s, 1e-5);
      EXPECT_EQ(where(bi, bj), best);
    }
}

TEST(Reductions, IntegerAndBooleanInputs) {
  auto n = make_host_tensor<std::int8_t>(make_shape(3, 40));
  for (index_t i = 0; i < 120; ++i) n[i] = static_cast<std::int8_t>(100 - (i % 7));
  auto s = make_host_tensor<std::int64_t>(make_shape(3));
  s = sum(n, mode<1>);  // 64-bit accumulation: no int8 overflow
  static_assert(std::is_same_v<decltype(sum(n, mode<1>))::value_type, std::int64_t>);
  auto ns = elements(n);
  expect_close(elements(s), reduce_ref(K::sum, ns, {3, 40}, 1), 0, "int8 sum");
  auto m = make_host_tensor<double>(make_shape(3));
  m = mean(n, mode<1>);
  expect_close(elements(m), reduce_ref(K::mean, ns, {3, 40}, 1), 1e-15, "int8 mean");
  auto a = make_host_tensor<index_t>(make_shape(3));
  a = argmax(n, mode<1>);
  expect_close(elements(a), reduce_ref(K::argmax, ns, {3, 40}, 1), 0, "int8 argmax");
  auto b = make_host_tensor<bool>(make_shape(3, 4));
  b(1, 2) = true;
  auto any = make_host_tensor<bool>(make_shape(3));
  any = max(b, mode<1>);
  EXPECT_FALSE(any(0));
  EXPECT_TRUE(any(1));
  EXPECT_FALSE(any(2));
  auto count = make_host_tensor<int>(make_shape(1));
  count = sum(b);
  EXPECT_EQ(count(0), 1);
}

TEST(Reductions, OverEveryModeOfALargeInputCrossesBlocks) {
  index_t const n = 100003;  // several 2^15 blocks and a partial one
  auto x = random_tensor<float>(make_shape(n), -1, 1, 10);
  x[n - 5] = 3.0f;  // the maximum sits in the last block
  auto xs = elements(x);
  EXPECT_NEAR(item(sum(x)), reduce_ref(K::sum, xs), 1e-6 * double(n));
  EXPECT_NEAR(item(logsumexp(x)), reduce_ref(K::lse, xs), 1e-5);
  EXPECT_EQ(item(argmax(x)), n - 5);
  EXPECT_EQ(item(max(x)), 3.0f);
  // item() needs exactly one element.
  try {
    (void)item(x);
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "item() needs an expression with one element, not one of shape (100003).");
  }
}

TEST(LogSumExp, StableForHugeMagnitudesAndInfinities) {
  auto x = make_host_tensor<float>(make_shape(6, 37));
  for (index_t j = 0; j < 37; ++j) {
    x(0, j) = 1e4f - float(j);       // exp overflows float without the max shift
    x(1, j) = -1e4f + float(j % 5);  // exp underflows to 0 without it
    x(2, j) = j % 3 ? -INFINITY : float(j) * 0.1f;
    x(3, j) = -INFINITY;
    x(4, j) = j == 20 ? INFINITY : 1.0f;
    x(5, j) = j == 30 ? NAN : 1.0f;
  }
  auto xs = elements(x);
  auto want = reduce_ref(K::lse, xs, {6, 37}, 1);
  want[5] = NAN;
  auto y = make_host_tensor<float>(make_shape(6));
  y = logsumexp(x, mode<1>);  // packet path
  expect_close(elements(y), want, 1e-6, "rows");
  auto xt = make_host_tensor<float>(make_shape(37, 6));
  xt = transpose(x);
  y = logsumexp(xt, mode<0>);  // strided rows: gathers
  expect_close(elements(y), want, 1e-6, "columns");
  auto xd = make_host_tensor<double>(make_shape(6, 37));
  xd = x;
  auto yd = make_host_tensor<double>(make_shape(6));
  yd = logsumexp(xd, mode<1>);
  expect_close(elements(yd), want, 1e-12, "double");
  // A row shorter than two packets runs the scalar kernel body.
  auto shortx = make_host_tensor<float>(make_shape(2, 3));
  shortx(0, 0) = -INFINITY, shortx(0, 1) = 1e4f, shortx(0, 2) = 1e4f;
  shortx(1, 0) = -INFINITY, shortx(1, 1) = -INFINITY, shortx(1, 2) = -INFINITY;
  auto ys = make_host_tensor<float>(make_shape(2));
  ys = logsumexp(shortx, mode<1>);
  EXPECT_NEAR(ys(0), 1e4 + std::log(2.0), 1e-2);
  EXPECT_EQ(ys(1), -INFINITY);
}

TEST(Softmax, AlongEitherModeMatchesFloat64) {
  auto x = random_tensor<float>(make_shape(5, 37), -6, 6, 11);
  auto xs = elements(x);
  for (int axis : {0, 1}) {
    auto lse = reduce_ref(K::lse, xs, {5, 37}, axis);
    auto y = make_host_tensor<float>(make_shape(5, 37));
    auto ly = make_host_tensor<float>(make_shape(5, 37));
    if (axis == 0) {
      y = softmax(x, mode<0>);
      ly = log_softmax(x, mode<0>);
    } else {
      y = softmax(x);
      ly = log_softmax(x);
    }
    for (index_t i = 0; i < 5 * 37; ++i) {
      index_t const g = axis == 0 ? i % 37 : i / 37;
      double const want = xs[static_cast<std::size_t>(i)] - lse[static_cast<std::size_t>(g)];
      EXPECT_NEAR(y[i], std::exp(want), 1e-6) << axis << " " << i;
      EXPECT_NEAR(ly[i], want, 1e-5) << axis << " " << i;
    }
  }
}

TEST(Softmax, MinusInfinityAndInPlace) {
  auto x = make_host_tensor<float>(make_shape(2, 19));
  for (index_t j = 0; j < 19; ++j) {
    x(0, j) = j % 2 ? -INFINITY : 0.0f;
    x(1, j) = float(j);
  }
  auto copy = make_host_tensor<float>(make_shape(2, 19));
  copy = x;
  x = softmax(x);  // element for element: no temporary needed, still exact
  auto const cs = elements(copy);
  double const lse = reduce_ref(K::lse, std::vector<double>(cs.begin() + 19, cs.end()));
  for (index_t j = 0; j < 19; ++j) {
    EXPECT_NEAR(x(0, j), j % 2 ? 0.0 : 0.1, 1e-7);
    EXPECT_NEAR(x(1, j), std::exp(double(j) - lse), 1e-6);
  }
}

// Rows long enough for the packet loops, along either mode (a strided destination), in f32
// (the one-exp path), f64 and bf16 (the logsumexp path): a row holding +inf or NaN, or only -inf,
// is NaN throughout in softmax and log_softmax, as torch.softmax gives; -inf elements of other
// rows get exactly 0.
template <class T>
void expect_degenerate_rows_are_nan() {
  constexpr float inf = INFINITY;
  auto x = make_host_tensor<T>(make_shape(4, 37));
  for (index_t j = 0; j < 37; ++j) {
    x(0, j) = T(j == 20 ? inf : float(j % 5));
    x(1, j) = T(-inf);
    x(2, j) = T(j == 3 ? NAN : float(j % 7));
    x(3, j) = T(j % 3 == 0 ? -inf : float(j % 4));
  }
  auto xt = make_host_tensor<T>(make_shape(37, 4));
  xt = transpose(x);
  auto y = make_host_tensor<T>(make_shape(4, 37));
  auto yt = make_host_tensor<T>(make_shape(37, 4));
  for (bool log : {false, true}) {
    if (log) {
      y = log_softmax(x);
      yt = log_softmax(xt, mode<0>);
    } else {
      y = softmax(x);
      yt = softmax(xt, mode<0>);
    }
    for (index_t r = 0; r < 4; ++r)
      for (index_t j = 0; j < 37; ++j) {
        for (double got : {double(float(y(r, j))), double(float(yt(j, r)))}) {
          if (r < 3)
            EXPECT_TRUE(std::isnan(got)) << log << " " << r << " " << j;
          else if (j % 3 == 0)
            EXPECT_EQ(got, log ? -INFINITY : 0.0) << log << " " << j;
          else
            EXPECT_TRUE(std::isfinite(got)) << log << " " << j;
        }
      }
  }
}

TEST(Softmax, RowsWithInfinityOrNaNAreNaNThroughoutAsInPyTorch) {
  expect_degenerate_rows_are_nan<float>();
  expect_degenerate_rows_are_nan<double>();
  expect_degenerate_rows_are_nan<bfloat16>();
}

TEST(Compositions, ReductionsInsideElementwiseExpressions) {
  auto x = random_tensor<float>(make_shape(6, 41), -5, 5, 12);
  auto s = make_host_tensor<float>(make_shape(6, 41));
  s = softmax(x);
  auto y = make_host_tensor<float>(make_shape(6, 41));
  y = exp(x - logsumexp(x, mode<1>, keep));
  expect_close(elements(y), elements(s), 1e-6, "exp(x - lse)");
  y = x - max(x, mode<1>, keep);
  auto m = make_host_tensor<float>(make_shape(6));
  m = max(y, mode<1>);
  for (index_t r = 0; r < 6; ++r) EXPECT_EQ(m(r), 0.0f);
  m = sum(exp(x - logsumexp(x, mode<-1>, keep)), mode<1>);
  for (index_t r = 0; r < 6; ++r) EXPECT_NEAR(m(r), 1.0f, 1e-5);
  m = mean(softmax(x), mode<1>);  // a row operation inside a reduction
  for (index_t r = 0; r < 6; ++r) EXPECT_NEAR(m(r), 1.0f / 41, 1e-7);
  // x = x - max(x): the reduction reads x before the pass writes it.
  auto x2 = make_host_tensor<float>(make_shape(6, 41));
  x2 = x;
  x2 = x2 - max(x2, mode<1>, keep);
  expect_close(elements(x2), elements(y), 0, "in place");
  // A kept reduction broadcast into a larger destination.
  y = sum(x, mode<1>, keep);
  auto sums = reduce_ref(K::sum, elements(x), {6, 41}, 1);
  for (index_t i = 0; i < 6 * 41; ++i)
    EXPECT_NEAR(y[i], sums[static_cast<std::size_t>(i / 41)], 1e-5);
}

TEST(Reductions, EmptyModes) {
  auto x = make_host_tensor<float>(make_shape(3, 0));
  auto s = make_host_tensor<float>(make_shape(3));
  s = sum(x, mode<1>);
  for (index_t i = 0; i < 3; ++i) EXPECT_EQ(s(i), 0.0f);
  s = mean(x, mode<1>);
  for (index_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(s(i)));
  s = logsumexp(x, mode<1>);
  for (index_t i = 0; i < 3; ++i) EXPECT_EQ(s(i), -INFINITY);
  s = 7.0f;
  try {
    s = max(x, mode<1>);
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot take the max over mode 1 of an expression of shape (3,0), which has "
                 "extent 0.");
  }
  auto i = make_host_tensor<index_t>(make_shape(3));
  try {
    i = argmax(x * 2.0f, mode<-1>);
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(),
                 "cannot take the argmax over mode 1 of an expression of shape (3,0), which has "
                 "extent 0.");
  }
  try {
    s = s + min(x);  // inside an expression: the error comes before anything is written
    FAIL() << "no error";
  } catch (Error const& e) {
    EXPECT_STREQ(e.what(), "cannot take the min of an empty expression of shape (3,0).");
  }
  for (index_t k = 0; k < 3; ++k) EXPECT_EQ(s(k), 7.0f);
  auto none = make_host_tensor<float>(make_shape(0));
  auto empty = make_host_tensor<float>(make_shape(4, 0));
  none = max(empty, mode<0>);  // no output element: nothing to compute, no error
}

}  // namespace
