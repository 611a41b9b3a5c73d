// The host packet path: which expressions take it, and its IEEE edge cases (exp of +-inf and of
// out-of-range arguments, log of 0 and negatives, NaN in every function), which must agree with
// the scalar kernel bodies' math.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

#include <tessel/tessel.hpp>

#include "expr/helpers.hpp"

// Operands for unevaluated expressions (declared only).
namespace packet_test {
using FT = decltype(tessel::make_host_tensor<float>(tessel::make_shape(1)));
using IT = decltype(tessel::make_host_tensor<int>(tessel::make_shape(1)));
using HT = decltype(tessel::make_host_tensor<tessel::half>(tessel::make_shape(1)));
FT& f();
IT& i();
HT& h();
}  // namespace packet_test

namespace {

using namespace tessel;
using namespace packet_test;
using exec::detail::eval_t;
using exec::host::packetizable_v;

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();

template <class E>
using ev = eval_t<E, 4>;
struct UserOp {
  float operator()(float a) const { return a; }
};

static_assert(packetizable_v<ev<decltype(exp(f() * 2.0f + f()))>, float>);
static_assert(packetizable_v<ev<decltype(where(f() > 0.0f, f(), -f()))>, float>);
static_assert(packetizable_v<ev<decltype(h() * 2.0f)>, float>);  // loads convert to float
static_assert(packetizable_v<ev<decltype(cast<half>(f()))>, float>);
static_assert(!packetizable_v<ev<decltype(f() > 0.0f)>, float>);  // a mask, not values
static_assert(!packetizable_v<ev<decltype(i() * 2)>, int>);       // integers: scalar path
static_assert(!packetizable_v<ev<decltype(f() + i())>, float>);   // mixed leaves: scalar path
static_assert(!packetizable_v<ev<decltype(map(UserOp{}, f()))>, float>);
static_assert(exec::host::vectorizable_v<float> && exec::host::vectorizable_v<double>);
// Floats under cast<double> load into double packets; mixed-precision reductions take that path.
static_assert(packetizable_v<ev<decltype(cast<double>(f()) * cast<double>(f()) + 1.0)>, double>);
static_assert(!packetizable_v<ev<decltype(cast<double>(exp(f())))>, double>);  // exp in float
using exec::host::native_leaves_v;  // a strided run can be gathered in packets of S
static_assert(native_leaves_v<ev<decltype(f() * 2.0f)>, float>);
static_assert(!native_leaves_v<ev<decltype(h() * 2.0f)>, float>);
static_assert(!native_leaves_v<ev<decltype(cast<double>(f()))>, double>);

// Applies op to values through the packet path (a contiguous float tensor) and the scalar path
// (each value alone through the kernel body's functor).
template <class MakeExpr, class Scalar>
void expect_agrees(std::vector<float> const& values, MakeExpr make_expr, Scalar scalar, float tol) {
  auto n = static_cast<index_t>(values.size());
  auto x = make_host_tensor<float>(make_shape(n));
  for (index_t k = 0; k < n; ++k) x[k] = values[static_cast<std::size_t>(k)];
  auto y = make_host_tensor<float>(make_shape(n));
  y = make_expr(x);
  for (index_t k = 0; k < n; ++k) {
    float const want = scalar(values[static_cast<std::size_t>(k)]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(y[k])) << values[static_cast<std::size_t>(k)];
    } else if (std::isinf(want) || want == 0.0f) {
      EXPECT_EQ(y[k], want) << values[static_cast<std::size_t>(k)];
    } else {
      EXPECT_NEAR(y[k], want, tol * std::abs(want)) << values[static_cast<std::size_t>(k)];
    }
  }
}

TEST(PacketPath, ExpEdgeCases) {
  // exp(-inf) = 0 and exp(x) = inf past the float range. Below ln(FLT_MIN) = -87.3365 the result
  // is 0 (std::exp gives a subnormal there).
  std::vector<float> v = {-inf, -1e4f, -200.0f, -88.8f, -88.0f, -87.5f, -87.0f, -1.0f, 0.0f,
                          1.0f, 88.0f, 88.7f,   88.8f,  200.0f, 1e30f,  inf,    nan,   -0.0f};
  expect_agrees(
      v, [](auto& x) { return exp(x); },
      [](float a) { return a < -87.3365448f ? 0.0f : std::exp(a); }, 3e-7f);
}

// The float packets' exp (exec/host/exp_float.hpp) over its whole normal range: every 1021st float
// from the least argument with a normal result to the greatest with a finite one, against exp in
// double rounded to float, within an ulp (also where each Horner step rounds twice, SSE2 without
// fused multiply-adds: measured 1.0 at worst over every 97th float, 0.008 on average); and the
// two ends exactly.
TEST(PacketPath, FloatExpWithinAnUlpOverTheNormalRange) {
  namespace c = exec::detail::exp_float;
  std::vector<float> args;
  for (float a = c::smallest_argument; a < c::largest_argument;) {
    args.push_back(a);
    std::uint32_t bits = 0;
    std::memcpy(&bits, &a, sizeof bits);
    bits = a < 0 ? (bits > 0x80000000u + 1021u ? bits - 1021u : 0u) : bits + 1021u;
    std::memcpy(&a, &bits, sizeof a);
  }
  args.push_back(c::largest_argument);
  index_t const n = index_t(args.size());
  ASSERT_GT(n, 1000000);
  auto x = make_host_tensor<float>(make_shape(n));
  auto y = make_host_tensor<float>(make_shape(n));
  std::copy(args.begin(), args.end(), x.data());
  y = exp(x);
  double worst = 0;
  float worst_at = 0;
  for (index_t k = 0; k < n; ++k) {
    float const want = static_cast<float>(std::exp(double(x[k])));
    ASSERT_TRUE(std::isfinite(y[k]) && y[k] >= std::numeric_limits<float>::min())
        << "exp(" << x[k] << ") = " << y[k];
    double const ulp = double(std::nextafter(want, inf)) - double(want);
    double const err = std::abs(double(y[k]) - double(want)) / ulp;
    if (err > worst) worst = err, worst_at = x[k];
  }
  EXPECT_LE(worst, 1.0) << "at exp(" << worst_at << ")";
  // Just past either end: 0 below (a subnormal result), +inf above.
  std::vector<float> const ends = {c::smallest_argument, std::nextafter(c::smallest_argument, -inf),
                                   c::largest_argument, std::nextafter(c::largest_argument, inf)};
  auto e = make_host_tensor<float>(make_shape(4));
  auto ye = make_host_tensor<float>(make_shape(4));
  std::copy(ends.begin(), ends.end(), e.data());
  ye = exp(e);
  EXPECT_GE(ye[0], std::numeric_limits<float>::min());
  EXPECT_LT(std::exp(double(ends[1])), double(std::numeric_limits<float>::min()));
  EXPECT_EQ(ye[1], 0.0f);
  EXPECT_LE(ye[2], std::numeric_limits<float>::max());
  EXPECT_GT(std::exp(double(ends[3])), double(std::numeric_limits<float>::max()));
  EXPECT_EQ(ye[3], inf);
  EXPECT_NEAR(ye[2], std::exp(double(ends[2])), 1e-7 * std::exp(double(ends[2])));
}

TEST(PacketPath, LogSqrtTanhAbsEdgeCases) {
  std::vector<float> v = {-inf, -1.0f, -0.0f, 0.0f, 1e-30f, 0.5f, 1.0f,
                          3.0f, 1e30f, inf,   nan,  2.0f,   7.5f};
  expect_agrees(
      v, [](auto& x) { return log(x); }, [](float a) { return std::log(a); }, 2e-7f);
  expect_agrees(
      v, [](auto& x) { return sqrt(x); }, [](float a) { return std::sqrt(a); }, 0.0f);
  expect_agrees(
      v, [](auto& x) { return tanh(x); }, [](float a) { return std::tanh(a); }, 2e-6f);
  expect_agrees(
      v, [](auto& x) { return abs(x); }, [](float a) { return std::abs(a); }, 0.0f);
}

TEST(PacketPath, SqrtIsCorrectlyRounded) {
  auto x = test::random_tensor<float>(make_shape(10000), 0, 1e6, 1);
  auto y = make_host_tensor<float>(make_shape(10000));
  y = sqrt(x);
  for (index_t k = 0; k < 10000; ++k) EXPECT_EQ(y[k], std::sqrt(x[k]));
}

TEST(PacketPath, StridedBroadcastAndTailLoadsAgreeWithContiguous) {
  auto big = test::random_tensor<float>(make_shape(9, 40), -2, 2, 2);
  auto strided = big(_, range(1, 38));              // inner stride 1, rows of 37: tails
  auto gathered = transpose(big)(range(0, 37), _);  // inner stride 40: gathers
  auto row = test::random_tensor<float>(make_shape(37), -2, 2, 3);
  auto out = make_host_tensor<float>(make_shape(9, 37));
  auto ref = make_host_tensor<float>(make_shape(9, 37));
  auto compact = make_host_tensor<float>(make_shape(9, 37));
  compact = strided;
  out = exp(strided) * row;
  for (index_t r = 0; r < 9; ++r)
    for (index_t c = 0; c < 37; ++c) ref(r, c) = std::exp(compact(r, c)) * row(c);
  for (index_t k = 0; k < 9 * 37; ++k) EXPECT_NEAR(out[k], ref[k], 3e-7f * std::abs(ref[k]));
  auto outt = make_host_tensor<float>(make_shape(37, 9));
  outt = exp(gathered);
  for (index_t r = 0; r < 37; ++r)
    for (index_t c = 0; c < 9; ++c)
      EXPECT_NEAR(outt(r, c), std::exp(big(c, r)), 3e-7f * std::exp(big(c, r)));
}

// Floats read into double packets (cast<double>) give the scalar path's values exactly, read
// contiguously (rows of 37: partial packets), with a stride (gathered lane by lane) or broadcast.
// Every operation here is exact in double except the last addition, which both paths round once.
TEST(PacketPath, FloatsReadAsDoubleGiveTheScalarValues) {
  auto big = test::random_tensor<float>(make_shape(9, 40), -2, 2, 7);
  auto row = test::random_tensor<float>(make_shape(37), -2, 2, 8);
  auto strided = big(_, range(1, 38));
  auto gathered = transpose(big)(range(0, 37), _);
  auto out = make_host_tensor<double>(make_shape(9, 37));
  out = cast<double>(strided) * cast<double>(strided) + 0.5 * cast<double>(row);
  for (index_t r = 0; r < 9; ++r)
    for (index_t c = 0; c < 37; ++c) {
      double const a = big(r, c + 1), b = row(c);
      EXPECT_EQ(out(r, c), a * a + 0.5 * b) << r << ", " << c;
    }
  auto outt = make_host_tensor<double>(make_shape(37, 9));
  outt = cast<double>(gathered) * 3.0;
  for (index_t r = 0; r < 37; ++r)
    for (index_t c = 0; c < 9; ++c)
      EXPECT_EQ(outt(r, c), double(big(c, r)) * 3.0) << r << ", " << c;
  // Broadcast along the innermost mode (stride 0): row r reads the one float row(r).
  auto spread =
      make_tensor(row.data(), make_layout(make_shape(9, 37), make_stride(Int<1>{}, Int<0>{})));
  out = cast<double>(spread) * 2.0 + cast<double>(strided);
  for (index_t r = 0; r < 9; ++r)
    for (index_t c = 0; c < 37; ++c)
      EXPECT_EQ(out(r, c), double(row(r)) * 2.0 + double(big(r, c + 1))) << r << ", " << c;
}

// Restores the process's streaming-store threshold when a test ends.
struct StreamingStores {
  index_t saved;
  explicit StreamingStores(index_t bytes) : saved(exec::set_streaming_store_bytes(bytes)) {}
  ~StreamingStores() { exec::set_streaming_store_bytes(saved); }
};

// Streaming stores change how a destination is written, never what: every element (the ones
// before the first packet-aligned address, the full packets, the tail) equals an ordinary pass's,
// bit for bit, whatever the destination's alignment, the element type and the thread count.
template <class T>
void expect_streaming_gives_same_bits() {
  index_t const n = 20011;  // runs far above the 4 KiB minimum, with a tail
  auto x = test::random_tensor<T>(make_shape(n + 16), T(-2), T(2), 5);
  auto z = test::random_tensor<T>(make_shape(n + 16), T(-2), T(2), 6);
  for (index_t offset : {0, 1, 3, 7}) {
    auto xs = x(range(offset, offset + n));
    auto zs = z(range(16 - offset, 16 - offset + n));
    auto plain = make_host_tensor<T>(make_shape(n + 16));
    auto streamed = make_host_tensor<T>(make_shape(n + 16));
    auto p = plain(range(offset, offset + n));
    auto s = streamed(range(offset, offset + n));
    {
      StreamingStores const off(-1);
      assign(p, T(1.5) * xs + T(0.25) * exp(zs), exec::Serial{});
    }
    for (int threads : {1, 2}) {
      StreamingStores const on(0);
      assign(s, T(1.5) * xs + T(0.25) * exp(zs), exec::OpenMP{threads});
      for (index_t k = 0; k < n; ++k)
        ASSERT_EQ(std::memcmp(&p[k], &s[k], sizeof(T)), 0)
            << "element " << k << ", offset " << offset << ", " << threads << " thread(s)";
    }
  }
}

TEST(PacketPath, StreamingStoresGiveTheSameBits) {
  expect_streaming_gives_same_bits<float>();
  expect_streaming_gives_same_bits<double>();
}

// a * b + c with the product rounded on its own, in scalar code (math::rounded_product) and in
// packets (ops::Mul), also where the compiler could fuse it into an FMA (this file builds a second
// time for x86-64-v3, exec_avx2.*). With a = b = 1 + 2^-12, a * b = 1 + 2^-11 + 2^-24 rounds to
// 1 + 2^-11 (a tie, to even), so a * b - 1 is 2^-11; an FMA would give 2^-11 + 2^-24.
TEST(PacketPath, ProductsAreRoundedBeforeALaterAddition) {
  volatile float const va = 1.0f + 0x1p-12f, vc = -1.0f;  // opaque to constant folding
  float const a = va, c = vc;
  EXPECT_EQ(math::rounded_product(a, a) + c, 0x1p-11f);
  volatile double const da = 1.0 + 0x1p-27, dc = -1.0;
  EXPECT_EQ(math::rounded_product(double(da), double(da)) + double(dc), 0x1p-26);
  auto x = make_host_tensor<float>(make_shape(67));
  auto y = make_host_tensor<float>(make_shape(67));
  for (index_t k = 0; k < 67; ++k) x[k] = a;
  y = x * x + c;
  for (index_t k = 0; k < 67; ++k) EXPECT_EQ(y[k], 0x1p-11f) << k;
}

// A destination of another type (half, stored through float packets) or a strided one is written
// with ordinary stores even when the threshold asks for streaming; its values stay right.
TEST(PacketPath, StreamingStoresLeaveOtherDestinationsAlone) {
  StreamingStores const on(0);
  auto x = test::random_tensor<float>(make_shape(64, 130), -2, 2, 7);
  auto h = make_host_tensor<half>(make_shape(64, 130));
  h = x * 2.0f;
  for (index_t k = 0; k < 64 * 130; ++k) EXPECT_EQ(float(h[k]), float(half(x[k] * 2.0f)));
  auto wide = make_host_tensor<float>(make_shape(130, 64));
  auto t = transpose(wide);  // inner stride 64
  t = x + 1.0f;
  for (index_t r = 0; r < 64; ++r)
    for (index_t c = 0; c < 130; ++c) EXPECT_EQ(wide(c, r), x(r, c) + 1.0f);
  EXPECT_EQ(exec::streaming_store_bytes(), 0);
}

TEST(PacketPath, StreamingThresholdIsSetForTheProcess) {
  index_t const before = exec::streaming_store_bytes();
  {
    StreamingStores const s(12345);
    EXPECT_EQ(exec::streaming_store_bytes(), 12345);
    EXPECT_TRUE(exec::streams_destination(12345));
    EXPECT_FALSE(exec::streams_destination(12344));
  }
  {
    StreamingStores const never(-1);
    EXPECT_FALSE(exec::streams_destination(index_t{1} << 40));
  }
  EXPECT_EQ(exec::streaming_store_bytes(), before);
}

}  // namespace

namespace {

// exec::exp_shifted_in_place, the unnormalized softmax of a contiguous row (FLCE's host row
// pass): exp(x - max) at every length around the packet width, its sum, and rows whose maximum
// is not finite left as they are.
TEST(ExpShiftedInPlace, GivesExpOfTheShiftedRowAndItsSum) {
  for (index_t n : {1, 3, 4, 7, 16, 37, 100}) {
    SCOPED_TRACE(n);
    std::vector<double> x(static_cast<std::size_t>(n));
    for (index_t j = 0; j < n; ++j) x[std::size_t(j)] = 3.0 * std::sin(0.7 * double(j)) + 1.0;
    std::vector<double> const before = x;
    double const m = *std::max_element(before.begin(), before.end());
    auto const e = exec::exp_shifted_in_place(x.data(), n);
    EXPECT_EQ(e.max, m);
    double sum = 0;
    for (index_t j = 0; j < n; ++j) {
      double const want = std::exp(before[std::size_t(j)] - m);
      EXPECT_NEAR(x[std::size_t(j)], want, 1e-15 * want) << j;
      sum += want;
    }
    EXPECT_NEAR(e.sum, sum, 1e-14 * sum);
    exec::scale_in_place(x.data(), n, 1.0 / e.sum);  // the softmax
    double total = 0;
    for (double p : x) total += p;
    EXPECT_NEAR(total, 1.0, 1e-14);
  }
}

TEST(ExpShiftedInPlace, LeavesARowWithANonFiniteMaximumUnwritten) {
  std::vector<std::vector<float>> const rows = {
      {1.0f, inf, 2.0f, 0.5f, 3.0f},
      {1.0f, 2.0f, std::numeric_limits<float>::quiet_NaN(), 0.5f, 3.0f},
      {-inf, -inf, -inf, -inf, -inf}};
  for (auto const& row : rows) {
    std::vector<float> x = row;
    auto const e = exec::exp_shifted_in_place(x.data(), index_t(x.size()));
    EXPECT_FALSE(std::isfinite(e.max));
    EXPECT_TRUE(std::isnan(e.sum));
    EXPECT_EQ(std::memcmp(x.data(), row.data(), x.size() * sizeof(float)), 0);
  }
  std::vector<float> x = {-inf, 0.0f, 1.0f, -inf, 2.0f, -inf, 0.5f, 0.25f, -inf};
  auto const e = exec::exp_shifted_in_place(x.data(), index_t(x.size()));
  EXPECT_EQ(e.max, 2.0f);
  EXPECT_EQ(x[0], 0.0f);  // exp(-inf) is exactly 0, as the softmax needs
  EXPECT_EQ(x[4], 1.0f);
}

#if TESSEL_BLAS
// The AVX-512 / AVX2 kernel behind the float rows of builds whose packets are narrower
// (exec/host/wide_exp.hpp), in each form the CPU runs: within an ulp of exp in double at every
// length around both vector widths, including arguments below ln(FLT_MIN) (then 0), -inf (0) and 0
// (exactly 1); the sum to float rounding; and run wherever the CPU has the vectors.
TEST(WideExp, ExpOfTheShiftedRowWithinAnUlpAndItsSum) {
  std::string_view const chosen = exec::detail::wide_exp_kernels();
  __builtin_cpu_init();
  bool const avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  bool const avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  EXPECT_EQ(chosen, avx512 ? "AVX-512" : avx2 ? "AVX2" : "none");
  if (chosen == "none")
    GTEST_SKIP() << "neither AVX-512 nor AVX2 here: the build's own packets compute the row";
  for (std::string_view kernels : {"AVX-512", "AVX2"}) {
    SCOPED_TRACE(kernels);
    float unused = 0;
    if (!exec::detail::wide_exp_shifted_in(kernels, &unused, 1, 0.0f, unused)) {
      EXPECT_EQ(kernels, "AVX-512");  // an AVX2 CPU
      continue;
    }
    for (index_t n : {1, 7, 8, 9, 15, 16, 17, 33, 1000}) {
      SCOPED_TRACE(n);
      std::vector<float> x(static_cast<std::size_t>(n));
      for (index_t j = 0; j < n; ++j)  // -100 to 0, a 0 (the maximum), a -inf
        x[std::size_t(j)] = -100.0f * static_cast<float>(std::abs(std::sin(0.37 * double(j + 1))));
      x[std::size_t(n / 2)] = 0.0f;
      if (n > 2) x[1] = -inf;
      std::vector<float> const before = x;
      float sum = 0;
      ASSERT_TRUE(exec::detail::wide_exp_shifted_in(kernels, x.data(), n, 0.0f, sum));
      double want_sum = 0;
      for (index_t j = 0; j < n; ++j) {
        double const arg = before[std::size_t(j)];
        double const want = arg < -87.33654475 ? 0.0 : std::exp(arg);
        EXPECT_NEAR(x[std::size_t(j)], want, 1.2e-7 * want) << "exp(" << arg << ")";
        want_sum += want;
      }
      EXPECT_EQ(x[std::size_t(n / 2)], 1.0f);
      EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum);
    }
    // Every argument of a fine grid over [-87, 0], with a shift, against exp in double.
    std::vector<float> grid;
    for (double a = -87.0; a <= 0.0; a += 0.0137) grid.push_back(static_cast<float>(a + 5.0));
    std::vector<float> const before = grid;
    float sum = 0;
    ASSERT_TRUE(
        exec::detail::wide_exp_shifted_in(kernels, grid.data(), index_t(grid.size()), 5.0f, sum));
    double worst = 0;
    for (std::size_t j = 0; j < grid.size(); ++j) {
      double const want = std::exp(double(before[j] - 5.0f));
      worst = std::max(worst, std::abs(grid[j] - want) / want);
    }
    EXPECT_LT(worst, 1.2e-7);  // an ulp of float (7e-8 measured)
  }
}

// exp_shifted_in_place on float rows takes that kernel where it helps, with the same results.
TEST(WideExp, FloatRowsOfExpShiftedInPlaceAgreeWithIt) {
  if (std::string_view(exec::detail::wide_exp_kernels()) == "none")
    GTEST_SKIP() << "neither AVX-512 nor AVX2 here";
  std::vector<float> a(1003);
  for (std::size_t j = 0; j < a.size(); ++j) a[j] = 4.0f * std::cos(0.11f * float(j));
  std::vector<float> b = a;
  auto const e = exec::exp_shifted_in_place(a.data(), index_t(a.size()));
  float sum = 0;
  ASSERT_TRUE(exec::detail::wide_exp_shifted(b.data(), index_t(b.size()), e.max, sum));
  if (exec::detail::wide_exp_may_help) {
    EXPECT_EQ(a, b);
    EXPECT_EQ(e.sum, sum);
  } else {  // an AVX-512 build: its own packets, to rounding
    for (std::size_t j = 0; j < a.size(); ++j) EXPECT_NEAR(a[j], b[j], 3e-7f * b[j]) << j;
  }
}
#endif

}  // namespace
