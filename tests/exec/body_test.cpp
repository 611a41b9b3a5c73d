// The kernel bodies' math (the host twins of the CUDA kernels) against float64 references: row
// reductions, the one-pass logsumexp and its combine operator, two reductions in one pass
// (PairOp), argmax ties and NaN, softmax, the row reduction with a fused epilogue on a block of
// real host lanes, and the lane contract (per-lane partials combined give the one-lane answer).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <tessel/exec/body/context.hpp>
#include <tessel/exec/body/elementwise.hpp>
#include <tessel/exec/body/reduce_ops.hpp>
#include <tessel/exec/body/row.hpp>

#include "support/thread_block.hpp"

namespace {

using namespace tessel;
using exec::SequentialContext;

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();

static_assert(SequentialContext{}.lane() == 0 && SequentialContext{}.lanes() == 1);
static_assert(exec::ExecutionContext<SequentialContext>);
static_assert(exec::SumOp<int>{}.identity() == 0);
static_assert(exec::MaxOp<int>{}(3, 7) == 7);

struct Row {
  std::vector<float> const* v;
  float operator()(index_t i) const { return (*v)[static_cast<std::size_t>(i)]; }
};

struct OutRow {
  std::vector<float>* v;
  void store(index_t i, float x) const { (*v)[static_cast<std::size_t>(i)] = x; }
};

// One lane of `lanes`, whose reduce hands back its own partial: lets a test combine the lanes'
// partials itself, as a block reduction does.
struct LaneContext {
  index_t l, n;
  index_t lane() const { return l; }
  index_t lanes() const { return n; }
  template <class T, class Combine>
  T reduce(T partial, Combine const&) const {
    return partial;
  }
};

std::vector<float> random_row(std::size_t n, float scale, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

double reference_lse(std::vector<float> const& v) {
  double m = -std::numeric_limits<double>::infinity();
  for (float x : v) m = std::max(m, double(x));
  if (!std::isfinite(m)) {
    double s = 0;
    for (float x : v) s += std::exp(double(x));
    return std::log(s);
  }
  double s = 0;
  for (float x : v) s += std::exp(double(x) - m);
  return m + std::log(s);
}

float lse_of(std::vector<float> const& v) {
  return exec::row_logsumexp_body(SequentialContext{}, Row{&v}, static_cast<index_t>(v.size()));
}

TEST(RowBodies, SumMeanMaxMinMatchFloat64) {
  for (std::size_t n : {1u, 2u, 7u, 1000u}) {
    auto v = random_row(n, 3.0f, static_cast<unsigned>(n));
    double sum = 0, mx = -1e300, mn = 1e300;
    for (float x : v) {
      sum += x;
      mx = std::max(mx, double(x));
      mn = std::min(mn, double(x));
    }
    index_t const len = static_cast<index_t>(n);
    SequentialContext ctx;
    EXPECT_NEAR(exec::row_sum_body(ctx, Row{&v}, len), sum, 1e-5 * double(n));
    EXPECT_NEAR(exec::row_mean_body(ctx, Row{&v}, len), sum / double(n), 1e-5);
    EXPECT_EQ(exec::row_max_body(ctx, Row{&v}, len), float(mx));
    EXPECT_EQ(exec::row_min_body(ctx, Row{&v}, len), float(mn));
  }
}

TEST(RowBodies, EmptyRowsGiveTheIdentities) {
  std::vector<float> v;
  SequentialContext ctx;
  EXPECT_EQ(exec::row_sum_body(ctx, Row{&v}, 0), 0.0f);
  EXPECT_TRUE(std::isnan(exec::row_mean_body(ctx, Row{&v}, 0)));
  EXPECT_EQ(exec::row_max_body(ctx, Row{&v}, 0), -inf);
  EXPECT_EQ(exec::row_min_body(ctx, Row{&v}, 0), inf);
  EXPECT_EQ(exec::row_argmax_body(ctx, Row{&v}, 0), -1);
  EXPECT_EQ(lse_of(v), -inf);
}

TEST(RowBodies, MaxAndMinPropagateNaN) {
  std::vector<float> v = {1.0f, nan, 3.0f};
  EXPECT_TRUE(std::isnan(exec::row_max_body(SequentialContext{}, Row{&v}, 3)));
  EXPECT_TRUE(std::isnan(exec::row_min_body(SequentialContext{}, Row{&v}, 3)));
}

TEST(LogSumExpBody, MatchesFloat64AndIsStableForLargeMagnitudes) {
  for (float scale : {1.0f, 30.0f, 1e4f}) {
    for (std::size_t n : {1u, 5u, 1000u}) {
      auto v = random_row(n, scale, 7u + static_cast<unsigned>(n));
      double const ref = reference_lse(v);
      EXPECT_NEAR(lse_of(v), ref, 1e-6 * std::max(1.0, std::abs(ref)) + 1e-5)
          << "scale " << scale << " n " << n;
    }
  }
  // exp(1e4) overflows float: a two-pass-free naive sum would give inf.
  std::vector<float> big = {1e4f, 1e4f, -1e4f};
  EXPECT_NEAR(lse_of(big), 1e4 + std::log(2.0), 1e-2);
  std::vector<float> small = {-1e4f, -1e4f};
  EXPECT_NEAR(lse_of(small), -1e4 + std::log(2.0), 1e-2);
}

TEST(LogSumExpBody, HandlesInfinitiesAndNaN) {
  EXPECT_NEAR(lse_of({-inf, 0.0f, -inf}), 0.0f, 1e-7);
  EXPECT_NEAR(lse_of({-inf, std::log(3.0f)}), std::log(3.0f), 1e-6);
  EXPECT_EQ(lse_of({-inf, -inf}), -inf);
  EXPECT_EQ(lse_of({1.0f, inf, 2.0f}), inf);
  EXPECT_EQ(lse_of({inf, -inf}), inf);
  EXPECT_TRUE(std::isnan(lse_of({1.0f, nan, 2.0f})));
  EXPECT_TRUE(std::isnan(lse_of({nan, inf})));
  EXPECT_TRUE(std::isnan(lse_of({-inf, nan})));
}

using Lse = exec::LogSumExpOp<float>;
using LseS = exec::LseState<float>;

LseS lse_state(std::vector<float> const& v) {
  return exec::row_reduce_body(SequentialContext{}, Lse{}, Row{&v}, 0,
                               static_cast<index_t>(v.size()));
}

TEST(LogSumExpCombine, MergingPartialsEqualsOnePass) {
  auto a = random_row(50, 20.0f, 1);
  auto b = random_row(70, 5.0f, 2);
  for (float& x : b) x += 40.0f;  // b's maximum is larger: a's sum must be rescaled
  std::vector<float> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  Lse op;
  float const merged = op.finalize(op(lse_state(a), lse_state(b)), 0);
  float const swapped = op.finalize(op(lse_state(b), lse_state(a)), 0);
  EXPECT_NEAR(merged, reference_lse(ab), 1e-5);
  EXPECT_NEAR(swapped, reference_lse(ab), 1e-5);
  // The identity is neutral on either side.
  LseS const s = lse_state(a);
  EXPECT_NEAR(op.finalize(op(op.identity(), s), 0), op.finalize(s, 0), 1e-6);
  EXPECT_NEAR(op.finalize(op(s, op.identity()), 0), op.finalize(s, 0), 1e-6);
}

TEST(LogSumExpCombine, InfinitePartials) {
  Lse op;
  LseS const neg = lse_state({-inf, -inf});
  LseS const finite = lse_state({1.0f, 2.0f});
  LseS const pos = lse_state({inf});
  EXPECT_EQ(op.finalize(op(neg, neg), 0), -inf);
  EXPECT_NEAR(op.finalize(op(neg, finite), 0), reference_lse({1.0f, 2.0f}), 1e-6);
  EXPECT_EQ(op.finalize(op(finite, pos), 0), inf);
  EXPECT_EQ(op.finalize(op(pos, neg), 0), inf);
  EXPECT_TRUE(std::isnan(op.finalize(op(finite, lse_state({nan})), 0)));
}

// PairOp: logsumexp of z and the sum of w z in one pass, as FLCE's row reduces its logits.
struct PairRow {
  std::vector<float> const* z;
  std::vector<float> const* w;
  exec::Pair<float, float> operator()(index_t i) const {
    auto const k = static_cast<std::size_t>(i);
    return {(*z)[k], (*w)[k] * (*z)[k]};
  }
};
using LsePlusSum = exec::PairOp<Lse, exec::SumOp<float>>;

TEST(PairOp, RunsTwoReductionsInOnePass) {
  auto const z = random_row(90, 12.0f, 6);
  auto const w = random_row(90, 1.0f, 7);
  std::vector<float> wz(z.size());
  for (std::size_t i = 0; i < z.size(); ++i) wz[i] = w[i] * z[i];
  LsePlusSum const op{};
  auto const r = exec::row_reduction(SequentialContext{}, op, PairRow{&z, &w}, index_t{90});
  // Each half of the pair is exactly what its own op gives over its own elements.
  EXPECT_EQ(r.first, exec::row_logsumexp_body(SequentialContext{}, Row{&z}, 90));
  EXPECT_EQ(r.second, exec::row_sum_body(SequentialContext{}, Row{&wz}, 90));
  // Partials of two halves combine (in either order) to the whole; the identity is neutral.
  auto const a = exec::row_reduce_body(SequentialContext{}, op, PairRow{&z, &w}, 0, index_t{40});
  auto const b = exec::row_reduce_body(SequentialContext{}, op, PairRow{&z, &w}, 40, index_t{90});
  for (auto const& s : {op(a, b), op(b, a)}) {
    auto const f = op.finalize(s, 90);
    EXPECT_NEAR(f.first, r.first, 1e-5);
    EXPECT_NEAR(f.second, r.second, 1e-4);
  }
  auto const id = op(op.identity(), a);
  EXPECT_EQ(id.first.max, a.first.max);
  EXPECT_EQ(id.first.sum, a.first.sum);
  EXPECT_EQ(id.second, a.second);
}

// The generic body softmax and FLCE's row are: on a block of real host threads (strided lanes, a
// barrier reduction) every element is written once, in place, with the one-lane result.
TEST(RowEpilogueBody, ABlockOfThreadsWritesEveryElementOnceInPlace) {
  auto const v = random_row(123, 9.0f, 8);
  std::vector<float> want(v);
  OutRow wo{&want};
  exec::row_softmax_body(SequentialContext{}, Row{&v}, wo, 123);
  for (int lanes : {2, 3, 8, 32}) {
    SCOPED_TRACE(lanes);
    std::vector<float> got(v);  // read and overwritten in place
    std::vector<int> writes(v.size(), 0);
    test::ThreadBlock block(lanes);
    float const lse = block.run([&](test::ThreadBlock::Context& ctx) {
      return exec::row_reduce_epilogue_body(ctx, Lse{}, Row{&got}, index_t{123}, [&](float s) {
        return [&, s](index_t i) {
          auto const k = static_cast<std::size_t>(i);
          got[k] = std::exp(got[k] - s);
          ++writes[k];
        };
      });
    });
    EXPECT_NEAR(lse, reference_lse(v), 1e-5);
    EXPECT_EQ(writes, std::vector<int>(v.size(), 1));
    for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
  }
}

using Arg = exec::ArgmaxOp<float>;
using ArgS = exec::ArgState<float>;

TEST(ArgmaxBody, TiesGoToTheLowestIndex) {
  std::vector<float> v = {1.0f, 5.0f, 2.0f, 5.0f, 5.0f};
  EXPECT_EQ(exec::row_argmax_body(SequentialContext{}, Row{&v}, 5), 1);
  Arg op;
  // Combining in either order keeps the lowest index of the maximum.
  EXPECT_EQ(op(ArgS{5.0f, 3}, ArgS{5.0f, 1}).index, 1);
  EXPECT_EQ(op(ArgS{5.0f, 1}, ArgS{5.0f, 3}).index, 1);
  EXPECT_EQ(op(ArgS{4.0f, 0}, ArgS{5.0f, 9}).index, 9);
  EXPECT_EQ(op(op.identity(), ArgS{-inf, 4}).index, 4);
  EXPECT_EQ(op(ArgS{-inf, 4}, op.identity()).index, 4);
}

TEST(ArgmaxBody, TheFirstNaNWins) {
  std::vector<float> v = {1.0f, nan, 9.0f, nan};
  EXPECT_EQ(exec::row_argmax_body(SequentialContext{}, Row{&v}, 4), 1);
  Arg op;
  EXPECT_EQ(op(ArgS{9.0f, 0}, ArgS{nan, 5}).index, 5);
  EXPECT_EQ(op(ArgS{nan, 5}, ArgS{nan, 2}).index, 2);
  EXPECT_EQ(op(ArgS{nan, 2}, ArgS{inf, 0}).index, 2);
}

TEST(SoftmaxBody, MatchesFloat64AndLogSoftmaxAgrees) {
  auto v = random_row(33, 8.0f, 3);
  std::vector<float> out(v.size()), logout(v.size());
  OutRow o{&out}, lo{&logout};
  exec::row_softmax_body(SequentialContext{}, Row{&v}, o, 33);
  exec::row_log_softmax_body(SequentialContext{}, Row{&v}, lo, 33);
  double const lse = reference_lse(v);
  double total = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_NEAR(out[i], std::exp(double(v[i]) - lse), 1e-6);
    EXPECT_NEAR(logout[i], double(v[i]) - lse, 1e-5);
    total += out[i];
  }
  EXPECT_NEAR(total, 1.0, 1e-5);
}

TEST(SoftmaxBody, MinusInfinityEntriesGetZero) {
  std::vector<float> v = {-inf, 0.0f, -inf, 0.0f};
  std::vector<float> out(4);
  OutRow o{&out};
  exec::row_softmax_body(SequentialContext{}, Row{&v}, o, 4);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], 0.5f, 1e-7);
  EXPECT_EQ(out[2], 0.0f);
}

// A +inf, NaN or all -inf row is NaN throughout, as PyTorch gives (the host executor's one-exp
// path agrees: tests/expr/reduce_test.cpp).
TEST(SoftmaxBody, RowsWithInfinityOrNaNAreNaNThroughout) {
  for (std::vector<float> v : {std::vector<float>{1.0f, inf, 2.0f},
                               {-inf, -inf, -inf},
                               {1.0f, nan, 2.0f},
                               {inf, inf, 0.0f}}) {
    std::vector<float> out(3), logout(3);
    OutRow o{&out}, lo{&logout};
    exec::row_softmax_body(SequentialContext{}, Row{&v}, o, 3);
    exec::row_log_softmax_body(SequentialContext{}, Row{&v}, lo, 3);
    for (int i = 0; i < 3; ++i) {
      EXPECT_TRUE(std::isnan(out[static_cast<std::size_t>(i)])) << v[0] << " " << i;
      EXPECT_TRUE(std::isnan(logout[static_cast<std::size_t>(i)])) << v[0] << " " << i;
    }
  }
}

// The contract a block-parallel context relies on: every lane's partial, combined with the
// operator, equals the one-lane result.
TEST(LaneContract, PartialsOfStridedLanesCombineToTheSequentialResult) {
  auto v = random_row(101, 10.0f, 4);
  v[77] = 50.0f;
  v[13] = 50.0f;  // a tie: argmax must report 13 whichever lane saw it
  index_t const n = 101;
  for (index_t lanes : {2, 3, 32}) {
    Lse lse;
    Arg arg;
    exec::SumOp<float> sum;
    auto lse_total = lse.identity();
    auto arg_total = arg.identity();
    float sum_total = 0.0f;
    for (index_t l = 0; l < lanes; ++l) {
      LaneContext ctx{l, lanes};
      lse_total = lse(lse_total, exec::row_reduce_body(ctx, lse, Row{&v}, 0, n));
      arg_total = arg(arg_total, exec::row_reduce_body(ctx, arg, Row{&v}, 0, n));
      sum_total += exec::row_reduce_body(ctx, sum, Row{&v}, 0, n);
    }
    EXPECT_NEAR(lse.finalize(lse_total, n), reference_lse(v), 1e-5);
    EXPECT_EQ(arg.finalize(arg_total, n), 13);
    EXPECT_NEAR(sum_total, exec::row_sum_body(SequentialContext{}, Row{&v}, n), 1e-3);
  }
}

TEST(ElementwiseBody, LanesCoverTheRangeOnce) {
  std::vector<float> src = random_row(40, 1.0f, 5);
  std::vector<float> dst(40, -1.0f);
  OutRow o{&dst};
  for (index_t l = 0; l < 3; ++l) exec::elementwise_body(LaneContext{l, 3}, o, Row{&src}, 5, 37);
  for (std::size_t i = 0; i < 40; ++i) EXPECT_EQ(dst[i], (i >= 5 && i < 37) ? src[i] : -1.0f);
}

}  // namespace
