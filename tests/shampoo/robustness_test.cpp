// Numerical robustness of the Shampoo step: zero gradients (no NaN; parameters change only by the
// documented decoupled weight decay), rank-deficient factors (finite inverse roots; with the
// pseudo-inverse the null space maps to 0), and NaN/Inf gradients or finite gradients that would
// overflow a factor after state has built up (tessel::Error naming the parameter; parameters, step
// count and state bitwise unchanged); scratch reused from an earlier step changes no bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <tessel/shampoo/optimizer.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;

using tessel::test::error_of;

// A 1-D, a 2-D and a 3-D parameter, blocked at 4: full-matrix and Kronecker-factored blocks.
Plan mixed_plan() {
  return make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                   std::vector<std::vector<index_t>>{{5}, {6, 3}, {2, 3, 2}});
}

template <class T>
std::vector<std::vector<T>> filled(Plan const& plan, T (*f)(std::size_t, std::size_t)) {
  std::vector<std::vector<T>> out;
  for (std::size_t p = 0; p < plan.num_params(); ++p) {
    std::size_t n = 1;
    for (index_t e : plan.params[p].shape) n *= static_cast<std::size_t>(e);
    out.emplace_back(n);
    for (std::size_t i = 0; i < n; ++i) out.back()[i] = f(p, i);
  }
  return out;
}

template <class T>
void run_step(Shampoo<T>& opt, std::vector<std::vector<T>>& params,
              std::vector<std::vector<T>> const& grads) {
  std::vector<std::span<T>> ps(params.begin(), params.end());
  std::vector<std::span<T const>> gs(grads.begin(), grads.end());
  opt.step(ps, gs);
}

template <class T>
bool state_is_finite(Shampoo<T> const& opt) {
  for (std::size_t b = 0; b < opt.plan().num_blocks(); ++b)
    for (std::size_t j = 0; j < opt.preconditioned_dims(b).size(); ++j) {
      for (T v : opt.factor_matrix(b, j))
        if (!std::isfinite(v)) return false;
      for (T v : opt.inverse_root(b, j))
        if (!std::isfinite(v)) return false;
    }
  return true;
}

template <class T>
T param_value(std::size_t p, std::size_t i) {
  return static_cast<T>(0.25 * static_cast<double>(p + 1) - 0.125 * static_cast<double>(i % 7));
}
template <class T>
T zero_value(std::size_t, std::size_t) {
  return T(0);
}
template <class T>
T grad_value(std::size_t p, std::size_t i) {
  return static_cast<T>(std::sin(1.0 + static_cast<double>(3 * p + i)));
}

template <class T>
class ShampooRobustness : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(ShampooRobustness, Types);

TYPED_TEST(ShampooRobustness, ZeroGradientsLeaveParametersUnchangedWithoutWeightDecay) {
  // Factors stay 0, so each inverse root is epsilon^(-1/r) I (finite) and the preconditioned
  // gradient is exactly 0: with no weight decay, W - lr * 0 = W bit for bit.
  using T = TypeParam;
  for (GraftingType grafting : {GraftingType::none, GraftingType::adam}) {
    Options o;
    o.epsilon = 1e-12;
    if (grafting == GraftingType::adam) o.grafting = adam_grafting();
    o.momentum = 0.5;
    Plan const plan = mixed_plan();
    Shampoo<T> opt(plan, o);
    auto params = filled<T>(plan, param_value<T>);
    auto const before = params;
    auto const grads = filled<T>(plan, zero_value<T>);
    for (int t = 0; t < 3; ++t) run_step(opt, params, grads);
    EXPECT_EQ(params, before);
    EXPECT_TRUE(state_is_finite(opt));
    EXPECT_NEAR(opt.inverse_root(0, 0)[0], 1e6, 1e6 * 1e-4)
        << "a 1-D block's root of (0 + epsilon I) is epsilon^(-1/2)";
  }
}

TYPED_TEST(ShampooRobustness, ZeroGradientsApplyOnlyDecoupledWeightDecay) {
  // With decoupled weight decay the documented update is W <- W - lr * (0 + wd * W).
  using T = TypeParam;
  Options o;
  o.lr = 0.1;
  o.weight_decay = 0.01;
  Plan const plan = mixed_plan();
  Shampoo<T> opt(plan, o);
  auto params = filled<T>(plan, param_value<T>);
  auto const before = params;
  run_step(opt, params, filled<T>(plan, zero_value<T>));
  for (std::size_t p = 0; p < params.size(); ++p)
    for (std::size_t i = 0; i < params[p].size(); ++i) {
      ASSERT_TRUE(std::isfinite(params[p][i]));
      EXPECT_NEAR(params[p][i], before[p][i] * (1 - 0.1 * 0.01), 1e-6) << p << ", " << i;
    }
}

// Gradients of rank 1 in every block: G = u v^T (and u (x) v (x) w for the 3-D parameter), so
// each factor G x_k G has rank 1 and d - 1 zero eigenvalues.
template <class T>
T rank_one_value(std::size_t p, std::size_t i) {
  double const u[] = {1.0, -2.0, 0.5, 3.0, 1.5, -1.0};
  return static_cast<T>(p == 0 ? u[i % 5] : u[i % 3] * u[(i / 3) % 6] * 0.5);
}

TYPED_TEST(ShampooRobustness, RankDeficientFactorsGiveFiniteRoots) {
  using T = TypeParam;
  for (RootMethod method : {RootMethod::eigen, RootMethod::coupled_newton}) {
    Options o;
    o.epsilon = 1e-6;
    o.root.method = method;
    Plan const plan = mixed_plan();
    Shampoo<T> opt(plan, o);
    auto params = filled<T>(plan, param_value<T>);
    auto const grads = filled<T>(plan, rank_one_value<T>);
    for (int t = 0; t < 3; ++t) run_step(opt, params, grads);
    EXPECT_TRUE(state_is_finite(opt));
    for (auto const& p : params)
      for (T v : p) ASSERT_TRUE(std::isfinite(v));
    for (std::size_t b = 0; b < plan.num_blocks(); ++b)
      EXPECT_EQ(opt.failed_amortized_computations(b), 0) << "block " << b;
  }
}

TEST(ShampooRobustness, ThePseudoInverseMapsTheNullSpaceOfARankDeficientFactorToZero) {
  // 1-D block of 4 with gradients along e0 and e1 only: F = diag(a, b, 0, 0). Its pseudo-inverse
  // root is diag(a^-1/2, b^-1/2, 0, 0): finite, and zero on span(e2, e3).
  Options o;
  o.epsilon = 0.0;
  o.root.eigen.pseudo_inverse = true;
  auto plan = make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{4}});
  Shampoo<double> opt(plan, o);
  std::vector<std::vector<double>> params{{1.0, 1.0, 1.0, 1.0}};
  std::vector<std::vector<double>> grads{{2.0, -1.0, 0.0, 0.0}};
  run_step(opt, params, grads);
  auto const X = opt.inverse_root(0, 0);
  ASSERT_TRUE(state_is_finite(opt));
  // F = g g^T = [[4, -2], [-2, 1]] in the top-left: rank 1, eigenvalue 5 along (2, -1)/sqrt(5).
  double const s = 1.0 / std::sqrt(5.0) / 5.0;  // 5^(-1/2) * v v^T with |v|^2 = 5
  double const want[4][4] = {
      {4 * s, -2 * s, 0, 0}, {-2 * s, 1 * s, 0, 0}, {0, 0, 0, 0}, {0, 0, 0, 0}};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_NEAR(X[static_cast<std::size_t>(4 * i + j)], want[i][j], 1e-12);
  EXPECT_EQ(params[0][2], 1.0);
  EXPECT_EQ(params[0][3], 1.0);
}

// Runs a failing step and returns its message; checks parameters, step count and the whole state
// dictionary are bitwise what they were (std::vector<float> == compares values, so memcmp).
template <class T>
std::string failed_step_bitwise(Shampoo<T>& opt, std::vector<std::vector<T>>& params,
                                std::vector<std::vector<T>> const& grads) {
  auto const before_params = params;
  StateDict const before_state = opt.state_dict();
  index_t const before_step = opt.step_count();
  std::vector<std::span<T>> ps(params.begin(), params.end());
  std::vector<std::span<T const>> gs(grads.begin(), grads.end());
  std::string const e = error_of([&] { opt.step(ps, gs); });
  for (std::size_t p = 0; p < params.size(); ++p)
    EXPECT_EQ(std::memcmp(params[p].data(), before_params[p].data(), params[p].size() * sizeof(T)),
              0)
        << "parameter " << p << " changed";
  EXPECT_EQ(opt.step_count(), before_step);
  EXPECT_TRUE(opt.state_dict() == before_state) << "the state changed";
  return e;
}

// After two good steps and refused ones, one more good step leaves opt and params exactly where
// a twin that took three good steps is.
template <class T>
void expect_next_step_matches_a_twin(Shampoo<T>& opt, std::vector<std::vector<T>>& params,
                                     std::vector<std::vector<T>> const& grads, Plan const& plan,
                                     Options const& o) {
  Shampoo<T> twin(plan, o);
  auto twin_params = filled<T>(plan, param_value<T>);
  for (int t = 0; t < 3; ++t) run_step(twin, twin_params, grads);
  run_step(opt, params, grads);
  EXPECT_EQ(params, twin_params);
  EXPECT_TRUE(opt.state_dict() == twin.state_dict());
}

TYPED_TEST(ShampooRobustness, NonFiniteGradientsAfterSomeStepsChangeNothing) {
  using T = TypeParam;
  Options o;
  o.momentum = 0.9;
  o.beta2 = 0.99;
  o.grafting = adam_grafting();
  Plan const plan = mixed_plan();
  Shampoo<T> opt(plan, o);
  auto params = filled<T>(plan, param_value<T>);
  auto const grads = filled<T>(plan, grad_value<T>);
  for (int t = 0; t < 2; ++t) run_step(opt, params, grads);
  ASSERT_EQ(opt.step_count(), 2);

  T const nan = std::numeric_limits<T>::quiet_NaN();
  T const inf = std::numeric_limits<T>::infinity();
  auto bad = grads;
  bad[2][7] = nan;
  EXPECT_EQ(
      failed_step_bitwise(opt, params, bad),
      "the gradient of parameter 2 has the value nan at element 7; gradients must be finite.");
  bad = grads;
  bad[1][17] = inf;
  EXPECT_EQ(
      failed_step_bitwise(opt, params, bad),
      "the gradient of parameter 1 has the value inf at element 17; gradients must be finite.");
  bad = grads;
  bad[0][0] = -inf;
  bad[2][1] = nan;  // the first bad value in parameter order is named
  EXPECT_EQ(
      failed_step_bitwise(opt, params, bad),
      "the gradient of parameter 0 has the value -inf at element 0; gradients must be finite.");

  // The optimizer is still usable: the next good step matches a twin that never saw the errors.
  expect_next_step_matches_a_twin(opt, params, grads, plan, o);
}

TYPED_TEST(ShampooRobustness, FiniteGradientsThatWouldOverflowAFactorChangeNothing) {
  // 2^(max_exponent / 2 + 2) is finite, but its square is not: g g^T would overflow the factor of
  // mode 0 of parameter 1's first block (its slice 0 holds the value). Refused before any write.
  using T = TypeParam;
  Options o;
  o.momentum = 0.9;
  o.beta2 = 0.99;
  o.grafting = adam_grafting();
  Plan const plan = mixed_plan();
  Shampoo<T> opt(plan, o);
  auto params = filled<T>(plan, param_value<T>);
  auto const grads = filled<T>(plan, grad_value<T>);
  for (int t = 0; t < 2; ++t) run_step(opt, params, grads);
  ASSERT_EQ(opt.step_count(), 2);

  auto bad = grads;
  bad[1][1] = static_cast<T>(std::ldexp(1.0, std::numeric_limits<T>::max_exponent / 2 + 2));
  ASSERT_TRUE(std::isfinite(bad[1][1]));
  std::string const e = failed_step_bitwise(opt, params, bad);
  std::string const prefix = "factor matrix 0 of parameter 1, block 0 would overflow at step 3: ";
  EXPECT_EQ(e.substr(0, prefix.size()), prefix) << e;
  EXPECT_NE(e.find("; nothing was changed."), std::string::npos) << e;

  // The optimizer is still usable: the next good step matches a twin that never saw the error.
  expect_next_step_matches_a_twin(opt, params, grads, plan, o);
}

// Steps reuse their scratch (exec/host/scratch_cache.hpp), which holds the last step's values:
// after the first step with roots the thread's cache holds the blocks, the next step takes them and
// gives them back (the amount kept stays), and the parameters are the same as with nothing kept.
TEST(ShampooScratch, StepsReuseTheirScratchAndGiveTheSameBits) {
  auto run = [](index_t bound) {
    exec::set_scratch_cache_bytes(bound);
    exec::release_scratch_cache();
    std::vector<float> w(256 * 192), g(w.size());
    for (std::size_t k = 0; k < w.size(); ++k) {
      w[k] = 0.01f * static_cast<float>(k % 17) - 0.05f;
      g[k] = 0.02f * static_cast<float>(k % 13) - 0.1f;
    }
    Options o;
    o.precondition_frequency = 1;
    o.start_preconditioning_step = 1;
    // 128 x 128 factors: scratch blocks above the cache's 64 KiB floor.
    Shampoo<float> opt(make_plan(PlanOptions<index_t, index_t>{128, 1, 1, DType::f32},
                                 std::vector<std::vector<index_t>>{{256, 192}}),
                       o);
    std::vector<std::span<float>> ps{w};
    std::vector<std::span<float const>> gs{g};
    std::vector<index_t> held;
    for (int step = 0; step < 3; ++step) {
      opt.step(ps, gs);
      held.push_back(exec::cached_scratch_bytes());
    }
    return std::pair{w, held};
  };
  index_t const previous = exec::scratch_cache_bytes();
  auto const [cached, held] = run(index_t{64} << 20);
  auto const [fresh, none] = run(0);
  exec::set_scratch_cache_bytes(previous);
  EXPECT_GT(held[1], 0);
  EXPECT_EQ(held[2], held[1]);
  EXPECT_EQ(none[2], 0);
  ASSERT_EQ(cached.size(), fresh.size());
  for (std::size_t k = 0; k < cached.size(); ++k) ASSERT_EQ(cached[k], fresh[k]) << k;
}

}  // namespace
