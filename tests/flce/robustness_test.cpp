// Numerical robustness of the host FLCE at the edges of each storage type: logits of +-1e4 in f32,
// logits near the f16 overflow threshold (65504) for half inputs, all-equal logits and V = 1.
// Every case is compared against a long-double reference (logits materialized, log-sum-exp
// taken with the max subtracted) written here independently of reference.hpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include <tessel/flce/forward.hpp>

#include "harness.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;
using namespace tessel::flce::test;

// Mean cross-entropy without options, in long double: loss, dX = dZ W and dW = dZ^T X with
// dZ = (softmax(Z) - onehot(t)) / BT.
struct LongResult {
  long double loss = 0;
  std::vector<long double> grad_input, grad_weight;
};

LongResult long_reference(Problem const& p) {
  auto const bt = p.bt, h = p.h, v = p.v;
  LongResult r;
  r.grad_input.assign(static_cast<std::size_t>(bt * h), 0.0L);
  r.grad_weight.assign(static_cast<std::size_t>(v * h), 0.0L);
  long double const inv_n = 1.0L / static_cast<long double>(bt);
  for (std::int64_t i = 0; i < bt; ++i) {
    std::vector<long double> z(static_cast<std::size_t>(v));
    long double m = -INFINITY;
    for (std::int64_t j = 0; j < v; ++j) {
      long double s = 0;
      for (std::int64_t k = 0; k < h; ++k)
        s += static_cast<long double>(p.x[i * h + k]) * static_cast<long double>(p.w[j * h + k]);
      z[j] = s;
      m = std::max(m, s);
    }
    long double sum = 0;
    for (auto zj : z) sum += std::exp(zj - m);
    long double const lse = m + std::log(sum);
    r.loss += (lse - z[p.target[i]]) * inv_n;
    for (std::int64_t j = 0; j < v; ++j) {
      long double const dz = (std::exp(z[j] - lse) - (j == p.target[i] ? 1.0L : 0.0L)) * inv_n;
      for (std::int64_t k = 0; k < h; ++k) {
        r.grad_input[i * h + k] += dz * static_cast<long double>(p.w[j * h + k]);
        r.grad_weight[j * h + k] += dz * static_cast<long double>(p.x[i * h + k]);
      }
    }
  }
  return r;
}

std::vector<double> narrowed(std::vector<long double> const& v) {
  return std::vector<double>(v.begin(), v.end());
}

bool all_finite(std::vector<double> const& v) {
  for (double e : v)
    if (!std::isfinite(e)) return false;
  return true;
}

// Runs tessel in T on p (whose values are exactly representable in T) and checks loss and
// gradients against the long-double reference; atol scales with the logits' magnitude because a
// softmax of logits of size L is only known to T's epsilon times L.
template <class T>
void expect_matches_long_reference(Problem const& p, Tolerance tol, index_t chunk_size = 0) {
  FlceRun const got = run_tessel<T>(p, ReferenceOptions{}, chunk_size);
  LongResult const want = long_reference(p);
  ASSERT_EQ(got.loss.size(), 1u);
  EXPECT_TRUE(std::isfinite(got.loss[0]));
  EXPECT_TRUE(all_finite(got.grad_input));
  EXPECT_TRUE(all_finite(got.grad_weight));
  EXPECT_TRUE(all_close(got.loss, {static_cast<double>(want.loss)}, tol));
  EXPECT_TRUE(all_close(got.grad_input, narrowed(want.grad_input), tol));
  EXPECT_TRUE(all_close(got.grad_weight, narrowed(want.grad_weight), tol));
}

// H = 1, x in {+1, -1}, w = scale * (distinct small integers): logits are exact in every type and
// reach +-scale * max|w|.
Problem scaled_problem(std::int64_t bt, std::int64_t v, double scale) {
  Problem p;
  p.bt = bt;
  p.h = 1;
  p.v = v;
  for (std::int64_t i = 0; i < bt; ++i) p.x.push_back(i % 2 == 0 ? 1.0 : -1.0);
  for (std::int64_t j = 0; j < v; ++j)
    p.w.push_back(scale * static_cast<double>(j - v / 2) /
                  static_cast<double>(v / 2 > 0 ? v / 2 : 1));
  for (std::int64_t i = 0; i < bt; ++i) p.target.push_back((i * 5 + 1) % v);
  return p;
}

TEST(FlceRobustness, HugeF32LogitsOfPlusMinus1e4MatchALongDoubleReference) {
  // Logits span [-1e4, 1e4]: exp would overflow without the max subtraction, and a target far
  // below the max has a loss of ~1e4 with softmax gradients that are exactly 0 or 1.
  Problem const p = scaled_problem(6, 9, 1e4);
  expect_matches_long_reference<float>(p, {1e-3, 1e-6});
  expect_matches_long_reference<float>(p, {1e-3, 1e-6}, /*chunk_size=*/2);
  expect_matches_long_reference<double>(p, {1e-9, 1e-12});
}

TEST(FlceRobustness, TinyF32LogitsOfPlusMinus1eMinus4MatchALongDoubleReference) {
  // Nearly uniform softmax: the loss is log V up to 1e-4 and the gradients are differences of
  // nearly equal probabilities.
  Problem const p = scaled_problem(6, 9, 1e-4);
  expect_matches_long_reference<float>(p, {1e-7, 1e-5});
  expect_matches_long_reference<double>(p, {1e-15, 1e-12});
}

TEST(FlceRobustness, HalfInputsWithLogitsNearTheF16OverflowThresholdStayFinite) {
  // Weights of +-65504 (f16's largest finite value) and +-32752: the logits are accumulated in
  // f32, so neither they nor exp(z - max) overflow, and dX = dZ W stays within f16's range.
  Problem const p = scaled_problem(4, 5, 65504.0);
  for (double w : p.w) ASSERT_EQ(round_to<half>(w), w);
  expect_matches_long_reference<half>(p, {1e-2, 1e-3});
  expect_matches_long_reference<bfloat16>(rounded<bfloat16>(p), {1e-2, 1e-2});
}

TEST(FlceRobustness, AllEqualLogitsGiveLogVAndUniformGradients) {
  // Every logit equals 3: loss log V exactly, dZ = (1/V - onehot) / BT.
  Problem p;
  p.bt = 4;
  p.h = 2;
  p.v = 8;
  p.x.assign(8, 1.5);
  p.w.assign(16, 1.0);
  p.target = {0, 3, 7, 3};
  FlceRun const got = run_tessel<float>(p, ReferenceOptions{});
  LongResult const want = long_reference(p);
  ASSERT_NEAR(static_cast<double>(want.loss), std::log(8.0), 1e-15);
  EXPECT_NEAR(got.loss[0], std::log(8.0), 1e-6);
  EXPECT_TRUE(all_close(got.grad_input, narrowed(want.grad_input), {1e-7, 1e-6}));
  EXPECT_TRUE(all_close(got.grad_weight, narrowed(want.grad_weight), {1e-7, 1e-6}));
}

TEST(FlceRobustness, OneClassGivesZeroLossAndZeroGradientsEvenForHugeLogits) {
  // V = 1: softmax is 1 = onehot, so loss and every gradient are exactly 0, whatever the logit.
  for (double scale : {1.0, 1e4, -1e4}) {
    Problem p;
    p.bt = 3;
    p.h = 2;
    p.v = 1;
    p.x = {1.0, -2.0, 0.5, 4.0, -3.0, 2.0};
    p.w = {scale, 0.25};
    p.target = {0, 0, 0};
    FlceRun const got = run_tessel<float>(p, ReferenceOptions{});
    LongResult const want = long_reference(p);
    EXPECT_EQ(want.loss, 0.0L);
    EXPECT_EQ(got.loss[0], 0.0) << "scale " << scale;
    for (double g : got.grad_input) EXPECT_EQ(g, 0.0) << "scale " << scale;
    for (double g : got.grad_weight) EXPECT_EQ(g, 0.0) << "scale " << scale;
  }
}

}  // namespace
