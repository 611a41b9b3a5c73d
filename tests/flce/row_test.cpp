// The fused row body on its own: a closed-form example, the sequential (host) context, a block of
// threads emulating the CUDA block context (strided lanes, a barrier reduction, in-place writes),
// the 16-bit gradient buffer the CUDA path uses, a chunk's row body (ChunkRows) with static and
// run-time plans, the online-softmax combination, and the host's row pass for plain rows
// (host_plain_rows) against the fused body.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include <tessel/exec/body/context.hpp>
#include <tessel/flce/host_rows.hpp>
#include <tessel/flce/row.hpp>

#include "flce/reference.hpp"
#include "support/thread_block.hpp"

namespace {

using namespace tessel;
using namespace tessel::flce;
using tessel::test::ThreadBlock;

static_assert(std::is_same_v<decltype(exec::SequentialContext::lanes()), Int<1>>);

RowConstants<double> constants(double smoothing, double z_scale, double softcap, index_t vocab,
                               double weight_sum, index_t ignore_index = -100) {
  RowConstants<double> k;
  k.ignore_index = ignore_index;
  k.one_minus_smoothing = 1 - smoothing;
  k.smoothing_per_class = smoothing / static_cast<double>(vocab);
  k.lse_square_scale = z_scale;
  k.softcap = softcap;
  k.class_weight_sum = weight_sum;
  k.smoothing = smoothing > 0;
  return k;
}

TEST(FusedRow, MatchesAClosedFormThreeClassExample) {
  double logits[3] = {1.0, 2.0, 3.0};
  double grad[3];
  RowRefs<double, double, double> r;
  r.logits = logits;
  r.grad = grad;
  exec::SequentialContext ctx;
  RowLoss<double> const l = fused_row(ctx, r, 3, 0, constants(0.0, 0.5, 0.0, 3, 3.0), 1.0, 1.0);
  double const lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(l.ce, lse - 1.0, 1e-14);
  EXPECT_NEAR(l.z, 0.5 * lse * lse, 1e-14);
  for (int j = 0; j < 3; ++j) {
    double const p = std::exp(logits[j] - lse);
    EXPECT_NEAR(grad[j], p - (j == 0 ? 1.0 : 0.0) + 2 * 0.5 * lse * p, 1e-14);
  }
}

TEST(FusedRow, AnIgnoredRowHasNoLossAndAZeroGradient) {
  std::vector<float> logits = {1.0f, -3.0f, 2.0f, 0.5f};
  std::vector<float> grad(4, 9.0f);
  RowRefs<float, float, float> r;
  r.logits = logits.data();
  r.grad = grad.data();
  RowConstants<float> k;
  k.ignore_index = 2;  // inside the vocabulary
  exec::SequentialContext ctx;
  RowLoss<float> const l = fused_row(ctx, r, Int<4>{}, 2, k, 1.0f, 1.0f);
  EXPECT_EQ(l.ce, 0.0f);
  EXPECT_EQ(l.z, 0.0f);
  EXPECT_EQ(grad, std::vector<float>(4, 0.0f));
}

// One row with every option on, through the sequential context (the host path).
struct RowCase {
  std::vector<double> logits, bias, class_weights;
  index_t target;
  RowConstants<double> k;
};

RowCase make_case(index_t vocab, unsigned seed) {
  auto p = flce::test::random_problem(1, 1, vocab, seed, true, true);
  RowCase c;
  c.logits = p.w;  // V values ~ N(0, 0.5)
  for (auto& e : c.logits) e *= 6;
  c.bias = p.bias;
  c.class_weights = p.class_weights;
  c.target = p.target[0];
  double weight_sum = 0;
  for (double w : c.class_weights) weight_sum += w;
  c.k = constants(0.1, 1e-2, 2.5, vocab, weight_sum);
  return c;
}

TEST(FusedRow, ABlockOfThreadsGivesTheSequentialResultForAnyLaneCount) {
  for (index_t vocab : {1, 3, 123}) {
    RowCase const c = make_case(vocab, 77u + static_cast<unsigned>(vocab));
    std::vector<double> expected(c.logits);  // in place
    RowRefs<double, double, double> r;
    r.logits = expected.data();
    r.grad = expected.data();
    r.bias = c.bias.data();
    r.class_weights = c.class_weights.data();
    exec::SequentialContext seq;
    RowLoss<double> const want = fused_row(seq, r, vocab, c.target, c.k, 0.7, 0.3);

    for (int lanes : {2, 4, 7, 32}) {
      SCOPED_TRACE(testing::Message() << "V " << vocab << ", " << lanes << " lanes");
      std::vector<double> got(c.logits);
      ThreadBlock block(lanes);
      RowLoss<double> const l = block.run([&](ThreadBlock::Context& ctx) {
        RowRefs<double, double, double> rr = r;
        rr.logits = got.data();
        rr.grad = got.data();
        return fused_row(ctx, rr, vocab, c.target, c.k, 0.7, 0.3);
      });
      EXPECT_NEAR(l.ce, want.ce, 1e-12 * std::abs(want.ce) + 1e-14);
      EXPECT_NEAR(l.z, want.z, 1e-12 * std::abs(want.z) + 1e-14);
      for (index_t j = 0; j < vocab; ++j) ASSERT_NEAR(got[j], expected[j], 1e-14) << j;
    }
  }
}

// The CUDA path for 16-bit storage: f32 logits, the gradient written to a separate bf16 buffer.
// Each element must be the bf16 rounding of the f32 gradient.
TEST(FusedRow, WritesA16BitGradientAsTheRoundedF32Gradient) {
  index_t const vocab = 50;
  RowCase const c = make_case(vocab, 5u);
  std::vector<float> logits(c.logits.begin(), c.logits.end());
  std::vector<bfloat16> bias, weights;
  for (double b : c.bias) bias.push_back(bfloat16(static_cast<float>(b)));
  for (double w : c.class_weights) weights.push_back(bfloat16(static_cast<float>(w)));
  RowConstants<float> k;
  k.one_minus_smoothing = 0.9f;
  k.smoothing_per_class = 0.1f / vocab;
  k.smoothing = true;
  k.class_weight_sum = 0;
  for (auto w : weights) k.class_weight_sum += static_cast<float>(w);

  std::vector<float> wide(vocab);
  std::vector<bfloat16> narrow(vocab);
  RowRefs<float, float, bfloat16> r1{logits.data(), wide.data(), bias.data(), 1, weights.data(), 1};
  RowRefs<float, bfloat16, bfloat16> r2{
      logits.data(), narrow.data(), bias.data(), 1, weights.data(), 1};
  exec::SequentialContext ctx;
  RowLoss<float> const a = fused_row(ctx, r1, vocab, c.target, k, 1.0f, 1.0f);
  RowLoss<float> const b = fused_row(ctx, r2, vocab, c.target, k, 1.0f, 1.0f);
  EXPECT_EQ(a.ce, b.ce);
  for (index_t j = 0; j < vocab; ++j) ASSERT_EQ(narrow[j].bits, bfloat16(wide[j]).bits) << j;
}

// A chunk's row body (what exec::for_each_row runs per row, on the host and as the CUDA kernel)
// over 5 rows of V = 37 with every option: a block of real threads per row gives the one-lane
// result, and the static and run-time plans give the same bits.
TEST(ChunkRows, ABlockOfThreadsPerRowAndBothPlanKindsGiveTheSequentialResult) {
  index_t const rows = 5, vocab = 37;
  auto p = flce::test::random_problem(rows, 1, vocab, 21u, true, true);
  std::vector<double> logits(static_cast<std::size_t>(rows * vocab));
  for (std::size_t i = 0; i < logits.size(); ++i)
    logits[i] = 4.0 * std::sin(0.37 * static_cast<double>(i));
  std::vector<std::int64_t> target = {3, 5, 36, -100, 17, 0, 9};  // the chunk is rows 2..6
  std::vector<double> dy = {9, 9, 0.5, 1.5, -2.0, 0.25, 1.0};
  double weight_sum = 0;
  for (double w : p.class_weights) weight_sum += w;

  auto body_for = [&](auto plan, std::vector<double>& grad, std::vector<double>& ce,
                      std::vector<double>& z) {
    ChunkRows<decltype(plan), double, double, double, std::int64_t> body;
    body.plan = plan;
    body.logits = logits.data();
    body.grad = grad.data();
    body.bias = p.bias.data();
    body.class_weights = p.class_weights.data();
    body.target = target.data();
    body.grad_output_rows = dy.data();
    body.scales = {0.5, 0.25};
    body.k = constants(0.1, 1e-2, 3.0, vocab, weight_sum);
    body.row_ce = ce.data();
    body.row_z = z.data();
    body.first_row = 2;
    return body;
  };
  std::vector<double> want_grad(logits.size()), want_ce(7, -1), want_z(7, -1);
  auto const sequential = body_for(FlcePlan(make_plan(7, 1, vocab, 5)), want_grad, want_ce, want_z);
  for (index_t i = 0; i < rows; ++i) sequential(exec::SequentialContext{}, i);
  EXPECT_EQ(want_ce[0], -1);   // rows outside the chunk are not written
  EXPECT_EQ(want_ce[3], 0.0);  // an ignored row
  EXPECT_NE(want_ce[2], 0.0);

  std::vector<double> grad(logits.size()), ce(7, -1), z(7, -1);
  auto const static_body =
      body_for(make_plan(Int<7>{}, Int<1>{}, Int<37>{}, Int<5>{}), grad, ce, z);
  static_assert(std::is_same_v<decltype(static_body)::vocab_type, Int<37>>);
  for (index_t i = 0; i < rows; ++i) static_body(exec::SequentialContext{}, i);
  EXPECT_EQ(grad, want_grad);
  EXPECT_EQ(ce, want_ce);
  EXPECT_EQ(z, want_z);

  for (int lanes : {2, 7, 32}) {
    SCOPED_TRACE(lanes);
    std::vector<double> g(logits.size()), c(7, -1), zz(7, -1);
    auto const body = body_for(make_plan(Int<7>{}, Int<1>{}, Int<37>{}, Int<5>{}), g, c, zz);
    for (index_t i = 0; i < rows; ++i) {
      ThreadBlock block(lanes);
      block.run([&](ThreadBlock::Context& ctx) {
        body(ctx, i);
        return 0;
      });
    }
    for (std::size_t j = 0; j < g.size(); ++j) ASSERT_NEAR(g[j], want_grad[j], 1e-14) << j;
    for (std::size_t r = 0; r < 7; ++r) {
      EXPECT_NEAR(c[r], want_ce[r], 1e-12 * std::abs(want_ce[r]) + 1e-14) << r;
      EXPECT_NEAR(zz[r], want_z[r], 1e-12 * std::abs(want_z[r]) + 1e-14) << r;
    }
  }
}

// The host's row pass for plain rows (flce/host_rows.hpp) gives what the fused body gives, to
// rounding, over a chunk with every kind of row: ordinary, ignored, a +inf logit, a NaN, all -inf
// (those three take the fused body's formula, so their bits agree), with class weights, per-row
// dy and a z-loss; with and without bias and temperature, with and without a gradient.
template <class C>
void expect_host_rows_match_fused(bool with_bias, double temperature, bool grads, double tol) {
  index_t const rows = 7, vocab = 37;
  auto const p = flce::test::random_problem(rows, 1, vocab, 5u, true, true);
  std::vector<C> bias(p.bias.begin(), p.bias.end()), weights(p.class_weights.begin(),
                                                             p.class_weights.end());
  std::vector<C> logits(static_cast<std::size_t>(rows * vocab));
  for (std::size_t i = 0; i < logits.size(); ++i)
    logits[i] = C(4.0 * std::sin(0.37 * static_cast<double>(i)));
  C const inf = std::numeric_limits<C>::infinity();
  logits[3 * vocab + 7] = inf;                                        // chunk row 3: a +inf
  logits[4 * vocab + 30] = std::numeric_limits<C>::quiet_NaN();       // chunk row 4: a NaN
  std::fill_n(logits.begin() + 5 * vocab, vocab, -inf);               // chunk row 5: all -inf
  std::vector<std::int64_t> target = {9, 3, -100, 36, 5, 17, 0, 11};  // the chunk is rows 1..7
  std::vector<C> dy = {9, 0.5, 1.5, -2.0, 0.25, 1.0, 3.0, 2.0};
  double weight_sum = 0;
  for (C w : weights) weight_sum += static_cast<double>(w);

  struct Out {
    std::vector<C> z, ce, zl, lse, logprob;
  };
  auto run = [&](bool host_path) {
    Out o{logits, std::vector<C>(8, C(-1)), std::vector<C>(8, C(-1)), std::vector<C>(8, C(-1)),
          std::vector<C>(8, C(-1))};
    ChunkRows<FlcePlan, C, C, C, std::int64_t> body;
    body.plan = FlcePlan(make_plan(8, 1, vocab, rows));
    body.logits = o.z.data();
    body.grad = grads ? o.z.data() : nullptr;
    body.bias = with_bias ? bias.data() : nullptr;
    body.class_weights = weights.data();
    body.target = target.data();
    body.grad_output_rows = dy.data();
    body.scales = {0.5, 0.25};
    RowConstants<C> k;
    k.lse_square_scale = C(1e-2);
    k.class_weight_sum = C(weight_sum);
    k.inv_temperature = C(1.0 / temperature);
    body.k = k;
    body.row_ce = o.ce.data();
    body.row_z = o.zl.data();
    body.lse = o.lse.data();
    body.target_logprob = o.logprob.data();
    body.first_row = 1;
    EXPECT_TRUE(plain_rows(body.k));
    if (host_path)
      host_plain_rows(exec::OpenMP{.threads = 2}, body, o.z.data(), rows);
    else
      for (index_t i = 0; i < rows; ++i) body(exec::SequentialContext{}, i);
    return o;
  };
  Out const want = run(false), got = run(true);
  auto expect_same = [&](std::vector<C> const& a, std::vector<C> const& b, char const* what) {
    for (std::size_t i = 0; i < a.size(); ++i) {
      SCOPED_TRACE(testing::Message() << what << "[" << i << "]");
      if (std::isnan(b[i]) || std::isinf(b[i]))
        EXPECT_TRUE(std::isnan(b[i]) ? std::isnan(a[i]) : a[i] == b[i]) << a[i] << " vs " << b[i];
      else
        EXPECT_NEAR(double(a[i]), double(b[i]), tol * (std::abs(double(b[i])) + 1e-3));
    }
  };
  expect_same(got.ce, want.ce, "row_ce");
  expect_same(got.zl, want.zl, "row_z");
  expect_same(got.lse, want.lse, "lse");
  expect_same(got.logprob, want.logprob, "target_logprob");
  EXPECT_EQ(got.ce[0], C(-1));  // rows outside the chunk are not written
  EXPECT_EQ(got.ce[2], C(0));   // the ignored row
  EXPECT_TRUE(std::isinf(got.lse[4]) && std::isnan(got.lse[5]) && std::isinf(got.lse[6]));
  if (grads) {
    expect_same(got.z, want.z, "grad");
    for (index_t j = 0; j < vocab; ++j) EXPECT_EQ(got.z[1 * vocab + j], C(0));  // ignored: zeros
  }
}

TEST(HostPlainRows, GiveTheFusedBodysResultsForEveryKindOfRow) {
  for (bool with_bias : {false, true})
    for (double temperature : {1.0, 0.7})
      for (bool grads : {true, false}) {
        SCOPED_TRACE(testing::Message() << "bias " << with_bias << ", T " << temperature
                                        << ", gradient " << grads);
        expect_host_rows_match_fused<double>(with_bias, temperature, grads, 1e-13);
        expect_host_rows_match_fused<float>(with_bias, temperature, grads, 2e-5);
      }
}

TEST(HostPlainRows, TakeOnlyRowsWithoutTheFusedBodysVariants) {
  RowConstants<float> k;
  EXPECT_TRUE(plain_rows(k));
  auto with = [&](auto change) {
    RowConstants<float> c = k;
    change(c);
    return plain_rows(c);
  };
  EXPECT_FALSE(with([](auto& c) { c.smoothing = true; }));
  EXPECT_FALSE(with([](auto& c) { c.entropy = true; }));
  EXPECT_FALSE(with([](auto& c) { c.argmax = true; }));
  EXPECT_FALSE(with([](auto& c) { c.softcap = 30.0f; }));
  EXPECT_FALSE(with([](auto& c) { c.soft_weight = 0.5f; }));
  EXPECT_TRUE(with([](auto& c) { c.inv_temperature = 2.0f; }));
  EXPECT_TRUE(with([](auto& c) { c.lse_square_scale = 1e-4f; }));
}

// The row's online softmax is exec's logsumexp paired with the smoothing sum (RowSoftmaxOp): its
// combination of lane partials, which the block reduction applies.
TEST(RowSoftmaxOp, AnEmptyStateIsTheIdentity) {
  RowSoftmaxOp<float> const op{};
  auto const empty = op.identity();
  RowSoftmaxOp<float>::state_type const s{{2.0f, 1.5f}, -3.0f};
  for (auto r : {op(empty, s), op(s, empty)}) {
    EXPECT_EQ(r.first.max, s.first.max);
    EXPECT_EQ(r.first.sum, s.first.sum);
    EXPECT_EQ(r.second, s.second);
  }
  auto both = op(empty, empty);
  EXPECT_EQ(both.first.sum, 0.0f);
  EXPECT_FALSE(std::isnan(both.first.sum));
}

TEST(RowSoftmaxOp, CombiningTwoHalvesGivesTheWholeRow) {
  std::vector<double> z = {0.5, -1.0, 4.0, 2.0, 3.5, -7.0};
  auto state = [&](std::size_t from, std::size_t to) {
    RowSoftmaxOp<double>::state_type s = RowSoftmaxOp<double>{}.identity();
    for (std::size_t j = from; j < to; ++j) s.first.max = std::max(s.first.max, z[j]);
    for (std::size_t j = from; j < to; ++j) {
      s.first.sum += std::exp(z[j] - s.first.max);
      s.second += z[j];
    }
    return s;
  };
  RowSoftmaxOp<double> const op{};
  auto const whole = state(0, 6);
  for (auto r : {op(state(0, 2), state(2, 6)), op(state(2, 6), state(0, 2))}) {
    EXPECT_EQ(r.first.max, whole.first.max);
    EXPECT_NEAR(r.first.sum, whole.first.sum, 1e-15);
    EXPECT_NEAR(r.second, whole.second, 1e-15);
  }
}

// The entropy's reduction: logsumexp and the softmax mean of z in one pass. Element by element,
// any split into two partials combined, and -inf elements (exp 0) give the direct formulas.
TEST(SoftmaxMomentOp, UpdatesAndCombinedHalvesGiveLogsumexpAndTheSoftmaxMean) {
  std::vector<double> const z = {0.5, -1.0, 4.0, -INFINITY, 2.0, 3.5, -7.0};
  double m = -INFINITY, s = 0, e = 0;
  for (double x : z) m = std::max(m, x);
  for (double x : z) s += std::exp(x - m);
  for (double x : z)
    if (x > -INFINITY) e += std::exp(x - m) * x / s;
  double const lse = m + std::log(s);
  exec::SoftmaxMomentOp<double> const op{};
  auto run = [&](std::size_t from, std::size_t to) {
    auto st = op.identity();
    for (std::size_t j = from; j < to; ++j) st = op.update(st, z[j], static_cast<index_t>(j));
    return st;
  };
  for (std::size_t cut = 0; cut <= z.size(); ++cut) {
    for (auto st : {op(run(0, cut), run(cut, z.size())), op(run(cut, z.size()), run(0, cut))}) {
      auto const r = op.finalize(st, static_cast<index_t>(z.size()));
      EXPECT_NEAR(r.first, lse, 1e-14) << "cut " << cut;
      EXPECT_NEAR(r.second, e, 1e-14) << "cut " << cut;
    }
  }
  auto const empty = op.finalize(op(op.identity(), op.identity()), 0);
  EXPECT_EQ(empty.first, -INFINITY);  // no element: logsumexp -inf, as exec's logsumexp
}

// The argmax beside an online softmax: for every split into two partials combined in either
// order, the index of the first largest element (ties to the lowest, the first NaN wins), and
// the wrapped operator's result unchanged.
TEST(WithArgmax, UpdatesAndCombinedHalvesGiveTheFirstLargestIndexBesideTheWrappedResult) {
  using Op = exec::WithArgmax<exec::LogSumExpOp<double>>;
  Op const op{};
  exec::LogSumExpOp<double> const plain{};
  auto run = [](auto const& o, std::vector<double> const& z, std::size_t from, std::size_t to) {
    auto st = o.identity();
    for (std::size_t j = from; j < to; ++j) st = o.update(st, z[j], static_cast<index_t>(j));
    return st;
  };
  struct Case {
    std::vector<double> z;
    index_t argmax;
  };
  for (Case const& c :
       {Case{{0.5, -1.0, 4.0, -INFINITY, 4.0, 3.5}, 2}, Case{{-INFINITY, -INFINITY}, 0},
        Case{{1.0, NAN, 7.0, NAN}, 1}, Case{{-2.0, -3.0, -2.0}, 0}, Case{{}, -1}}) {
    auto const n = static_cast<index_t>(c.z.size());
    for (std::size_t cut = 0; cut <= c.z.size(); ++cut) {
      SCOPED_TRACE(testing::Message() << "case with argmax " << c.argmax << ", cut " << cut);
      auto const lo = run(op, c.z, 0, cut), hi = run(op, c.z, cut, c.z.size());
      for (auto st : {op(lo, hi), op(hi, lo)}) {
        auto const r = op.finalize(st, n);
        EXPECT_EQ(r.second, c.argmax);
        double const want = plain.finalize(run(plain, c.z, 0, c.z.size()), n);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(r.first));
        } else if (std::isinf(want)) {
          EXPECT_EQ(r.first, want);
        } else {
          EXPECT_NEAR(r.first, want, 1e-14);
        }
      }
    }
  }
}

// The fused row's argmax on a block of lanes equals the sequential one and the first largest
// logit (after temperature and softcap), with and without smoothing and the entropy, and an
// ignored row has none.
TEST(FusedRow, TheArgmaxOfABlockOfThreadsIsTheFirstLargestLogit) {
  for (index_t vocab : {1, 5, 123}) {
    RowCase c = make_case(vocab, 91u + static_cast<unsigned>(vocab));
    if (vocab > 4) {  // a tie, far above the rest
      c.logits[3] = c.logits[vocab - 1] = 50.0;
      c.bias[3] = c.bias[vocab - 1] = 0.0;
    }
    for (bool smoothing : {false, true}) {
      for (bool entropy : {false, true}) {
        RowConstants<double> k = c.k;
        k.smoothing = smoothing;
        k.entropy = entropy;
        k.argmax = true;
        k.softcap = 30;
        k.inv_temperature = 0.5;
        index_t first = 0;
        auto z = [&](index_t j) {
          double const x = (c.logits[j] + c.bias[j]) * k.inv_temperature;
          return k.softcap * std::tanh(x / k.softcap);
        };
        for (index_t j = 1; j < vocab; ++j)
          if (z(j) > z(first)) first = j;
        RowRefs<double, double, double> r;
        r.logits = c.logits.data();
        r.bias = c.bias.data();
        r.class_weights = c.class_weights.data();
        for (int lanes : {1, 3, 32}) {
          SCOPED_TRACE(testing::Message() << "V " << vocab << ", smoothing " << smoothing
                                          << ", entropy " << entropy << ", " << lanes << " lanes");
          ThreadBlock block(lanes);
          RowLoss<double> const l = block.run([&](ThreadBlock::Context& ctx) {
            return fused_row(ctx, r, vocab, c.target, k, 1.0, 1.0);
          });
          EXPECT_EQ(l.argmax, first);
          if (vocab > 4) {
            EXPECT_EQ(l.argmax, 3);
          }
          k.argmax = false;
          RowLoss<double> const without = block.run([&](ThreadBlock::Context& ctx) {
            return fused_row(ctx, r, vocab, c.target, k, 1.0, 1.0);
          });
          k.argmax = true;
          EXPECT_EQ(without.argmax, -1);
          EXPECT_EQ(without.ce, l.ce);  // same lane order, same combination: the same bits
          RowLoss<double> const ignored = block.run([&](ThreadBlock::Context& ctx) {
            return fused_row(ctx, r, vocab, k.ignore_index, k, 1.0, 1.0);
          });
          EXPECT_EQ(ignored.argmax, -1);
        }
      }
    }
  }
}

}  // namespace
