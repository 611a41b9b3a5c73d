// The Shampoo step against the float64 reference (reference.hpp) for 0-D, 1-D, 2-D and 3-D
// parameters across the options: beta2 = 1 and < 1, bias correction on and off, large and tiny
// epsilon, every grafting kind, exponent overrides, amortization and the grafting warm-up,
// momentum, Nesterov, both weight decays, beta3, and float parameters; eigendecomposed Shampoo
// (the same direction from a cached eigendecomposition) and KL-Shampoo (factors from the gradient
// preconditioned along the other modes) against the same reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <tessel/shampoo/optimizer.hpp>
#include <tessel/shampoo/param_groups.hpp>

#include "reference.hpp"
#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using reference::ReferenceOptions;
using reference::ReferenceShampoo;
using tessel::test::error_of;

// A 0-D parameter, a bias, a matrix larger than the block size and a 3-D tensor.
std::vector<std::vector<long>> const shapes = {{}, {5}, {6, 5}, {2, 3, 4}};

Options to_options(ReferenceOptions const& r) {
  Options o;
  o.lr = r.lr;
  o.beta1 = r.beta1;
  o.beta2 = r.beta2;
  o.beta3 = r.beta3;
  o.epsilon = r.epsilon;
  o.momentum = r.momentum;
  o.dampening = r.dampening;
  o.use_nesterov = r.nesterov;
  o.weight_decay = r.weight_decay;
  o.weight_decay_type = r.l2 ? WeightDecayType::l2 : WeightDecayType::decoupled;
  o.precondition_frequency = r.frequency;
  o.start_preconditioning_step = r.start;
  o.use_bias_correction = r.bias_correction;
  GraftingType const kinds[] = {GraftingType::none, GraftingType::sgd, GraftingType::adagrad,
                                GraftingType::rmsprop, GraftingType::adam};
  o.grafting = {kinds[r.grafting], r.graft_beta2, r.graft_eps};
  for (auto const& [order, dims] : r.exponent) o.inverse_exponent_override[order] = dims;
  o.factor_matrix_dtype = DType::f64;
  o.kl_shampoo = r.kl;
  AveragingType const averaging[] = {AveragingType::none, AveragingType::generalized_primal,
                                     AveragingType::schedule_free};
  o.averaging = {averaging[r.averaging], r.mu_x, r.mu_y, r.lr_power};
  return o;
}

Plan plan_for(ReferenceOptions const& r, std::vector<std::vector<long>> const& s = shapes) {
  std::vector<std::vector<index_t>> v(s.begin(), s.end());
  return make_plan(
      PlanOptions<index_t, index_t>{r.max_dim, r.target_dims == 0 ? infinite : r.target_dims, 1,
                                    DType::f32},
      v);
}

std::vector<double> random_values(std::mt19937& rng, long n, double scale) {
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

// Runs `steps` steps of Shampoo<T> and of the reference on the same random gradients and returns
// the largest difference of the parameters relative to their largest magnitude.
template <class T>
double run_against_reference(ReferenceOptions const& r, int steps = 6,
                             std::vector<std::vector<long>> const& s = shapes,
                             DType factor_dtype = DType::f64,
                             PreconditionerType type = PreconditionerType::shampoo) {
  std::mt19937 rng(1234);
  std::vector<std::vector<double>> ref_params;
  for (auto const& shape : s)
    ref_params.push_back(random_values(rng, reference::numel(shape), 1.0));
  std::vector<std::vector<T>> params;
  for (auto const& p : ref_params) params.emplace_back(p.begin(), p.end());
  Options o = to_options(r);
  o.factor_matrix_dtype = factor_dtype;
  o.preconditioner = type;
  Shampoo<T> opt(plan_for(r, s), o);
  ReferenceShampoo ref(s, r);
  for (int t = 0; t < steps; ++t) {
    std::vector<std::vector<double>> grads;
    for (auto const& shape : s) grads.push_back(random_values(rng, reference::numel(shape), 0.5));
    std::vector<std::vector<T>> g;
    for (auto const& x : grads) g.emplace_back(x.begin(), x.end());
    std::vector<std::span<T>> ps(params.begin(), params.end());
    std::vector<std::span<T const>> gs(g.begin(), g.end());
    opt.step(ps, gs);
    ref.step(ref_params, grads);
  }
  EXPECT_EQ(opt.step_count(), steps);
  double largest = 0.0, diff = 0.0;
  for (std::size_t p = 0; p < params.size(); ++p)
    for (std::size_t i = 0; i < params[p].size(); ++i) {
      largest = std::max(largest, std::abs(ref_params[p][i]));
      diff = std::max(diff, std::abs(static_cast<double>(params[p][i]) - ref_params[p][i]));
    }
  return diff / largest;
}

// The parameters must move: a reference that does nothing would otherwise agree.
TEST(ShampooStep, ParametersMove) {
  ReferenceOptions r;
  r.lr = 0.1;
  std::vector<std::vector<long>> s = {{3, 2}};
  Shampoo<double> opt(plan_for(r, s), to_options(r));
  std::vector<double> w(6, 1.0), g{1, 2, 3, 4, 5, 6};
  opt.step({std::span<double>(w)}, {std::span<double const>(g)});
  for (double x : w) EXPECT_NE(x, 1.0);
}

TEST(ShampooStep, DefaultsMatchTheReference) {
  EXPECT_LT(run_against_reference<double>(ReferenceOptions{}), 1e-9);
}

TEST(ShampooStep, Beta2BelowOneWithAndWithoutBiasCorrection) {
  ReferenceOptions r;
  r.beta2 = 0.95;
  EXPECT_LT(run_against_reference<double>(r), 1e-9);
  r.bias_correction = false;
  EXPECT_LT(run_against_reference<double>(r), 1e-9);
}

TEST(ShampooStep, BiasCorrectionOffWithBetaOne) {
  ReferenceOptions r;
  r.bias_correction = false;
  EXPECT_LT(run_against_reference<double>(r), 1e-9);
}

TEST(ShampooStep, LargeAndTinyEpsilon) {
  ReferenceOptions r;
  r.epsilon = 0.5;
  EXPECT_LT(run_against_reference<double>(r), 1e-9);
  // A tiny epsilon leaves a rank-deficient factor's inverse root ill-posed (its null space is
  // rounding noise), so the first inverse roots come after enough steps for full-rank factors.
  r.epsilon = 1e-30;
  r.frequency = 6;
  EXPECT_LT(run_against_reference<double>(r, 8), 1e-9);
}

TEST(ShampooStep, EveryGraftingKind) {
  for (int kind = 1; kind <= 4; ++kind) {
    ReferenceOptions r;
    r.grafting = kind;
    r.graft_beta2 = kind == 3 ? 0.99 : kind == 4 ? 0.999 : 1.0;
    EXPECT_LT(run_against_reference<double>(r), 1e-9) << "grafting kind " << kind;
  }
}

TEST(ShampooStep, ExponentOverrides) {
  ReferenceOptions r;
  r.exponent[2] = {{0, 0.0}};   // 2-D blocks: dim 0 not preconditioned, dim 1 default
  r.exponent[1] = {{0, 0.25}};  // 1-D blocks: root 4
  r.exponent[3] = {{1, 0.5}};   // 3-D blocks: dim 1 with root 2
  EXPECT_LT(run_against_reference<double>(r), 1e-9);
}

TEST(ShampooStep, AllDimensionsOverriddenLeavesTheGradientAlone) {
  ReferenceOptions r;
  r.max_dim = 3;  // (3, 2) stays one 2-D block
  Plan p = plan_for(r, {{3, 2}});
  Options o = to_options(r);
  o.inverse_exponent_override[2] = 0.0;
  o.beta1 = 0.0;
  o.lr = 1.0;
  Shampoo<double> opt(p, o);
  EXPECT_TRUE(opt.preconditioned_dims(0).empty());
  std::vector<double> w(6, 0.0), g{1, 2, 3, 4, 5, 6};
  opt.step({std::span<double>(w)}, {std::span<double const>(g)});
  for (int i = 0; i < 6; ++i)
    EXPECT_DOUBLE_EQ(w[static_cast<std::size_t>(i)], -g[static_cast<std::size_t>(i)]);
}

TEST(ShampooStep, AmortizedRootsAndGraftingWarmUp) {
  ReferenceOptions r;
  r.frequency = 3;
  r.start = 4;
  EXPECT_LT(run_against_reference<double>(r, 10), 1e-9);
  r.grafting = 4;
  r.graft_beta2 = 0.999;
  EXPECT_LT(run_against_reference<double>(r, 10), 1e-9);
}

TEST(ShampooStep, MomentumNesterovDampeningAndWeightDecay) {
  ReferenceOptions r;
  r.momentum = 0.5;
  r.weight_decay = 0.01;
  EXPECT_LT(run_against_reference<double>(r), 1e-9);
  r.nesterov = true;
  r.dampening = 0.1;
  EXPECT_LT(run_against_reference<double>(r), 1e-9);
  r.l2 = true;
  EXPECT_LT(run_against_reference<double>(r), 1e-9);
}

TEST(ShampooStep, Beta3AndNoFiltering) {
  ReferenceOptions r;
  r.beta3 = 0.5;
  EXPECT_LT(run_against_reference<double>(r), 1e-9);
  r.beta1 = 0.0;
  r.beta3 = -1.0;
  EXPECT_LT(run_against_reference<double>(r), 1e-9);
}

TEST(ShampooStep, KeptShapesGiveAnUnpreconditionedZeroDBlock) {
  ReferenceOptions r;
  r.target_dims = 0;  // infinite: a 0-D parameter stays 0-D
  r.grafting = 2;
  std::vector<std::vector<long>> s = {{}, {1, 4}, {6, 5}};
  EXPECT_LT(run_against_reference<double>(r, 6, s), 1e-9);
  Shampoo<double> opt(plan_for(r, s), to_options(r));
  EXPECT_TRUE(opt.preconditioned_dims(0).empty());
}

TEST(ShampooStep, BlocksSmallerThanTheirParameters) {
  ReferenceOptions r;
  r.max_dim = 2;
  r.beta2 = 0.9;
  std::vector<std::vector<long>> s = {{5, 3}, {3, 3, 2}, {7}};
  EXPECT_LT(run_against_reference<double>(r, 5, s), 1e-9);
}

TEST(ShampooStep, FloatParametersFollowTheReference) {
  ReferenceOptions r;
  r.epsilon = 1e-6;
  r.grafting = 4;
  r.graft_beta2 = 0.999;
  EXPECT_LT(run_against_reference<float>(r, 5, shapes, DType::f32), 2e-4);
}

TEST(ShampooStep, RootsFollowTheOrderOfEachBlock) {
  ReferenceOptions r;
  Shampoo<double> opt(plan_for(r), to_options(r));
  // Blocks: 0-D -> (1); (5) -> (4) (1); (6,5) -> four 2-D blocks; (2,3,4) one 3-D block.
  ASSERT_EQ(opt.plan().num_blocks(), 8u);
  EXPECT_EQ(opt.roots(0), std::vector<double>{2.0});
  EXPECT_EQ(opt.roots(1), std::vector<double>{2.0});
  EXPECT_EQ(opt.roots(3), (std::vector<double>{4.0, 4.0}));
  EXPECT_EQ(opt.roots(7), (std::vector<double>{6.0, 6.0, 6.0}));
}

TEST(ShampooStep, OneDBlockIsFullMatrixAdaGrad) {
  // With beta1 = 0 and beta2 = 1, one step on a 1-D block gives (g g^T + eps I)^(-1/2) g.
  ReferenceOptions r;
  r.beta1 = 0.0;
  r.lr = 1.0;
  r.epsilon = 1e-3;
  std::vector<std::vector<long>> s = {{3}};
  Shampoo<double> opt(plan_for(r, s), to_options(r));
  std::vector<double> w(3, 0.0), g{3.0, 0.0, 4.0};
  opt.step({std::span<double>(w)}, {std::span<double const>(g)});
  // g is an eigenvector of g g^T + eps I with eigenvalue |g|^2 + eps = 25.001.
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(w[static_cast<std::size_t>(i)], -g[static_cast<std::size_t>(i)] / std::sqrt(25.001),
                1e-12);
}

// Eigendecomposed Shampoo forms the same inverse roots from its cached eigendecomposition on every
// step: the reference's step, across amortization, grafting and overrides.
TEST(ShampooStep, EigendecomposedFollowsTheReference) {
  auto const eig = PreconditionerType::eigendecomposed;
  ReferenceOptions r;
  EXPECT_LT(run_against_reference<double>(r, 6, shapes, DType::f64, eig), 1e-9);
  r.beta2 = 0.95;
  r.frequency = 2;
  r.grafting = 4;
  r.graft_beta2 = 0.999;
  r.exponent[3] = {{1, 0.5}};
  // An epsilon that carries the rank-deficient factors of the first steps: with 1e-12 their null
  // space's eigenvalues differ by rounding, and so does the basis each eigensolver call picks.
  r.epsilon = 1e-6;
  EXPECT_LT(run_against_reference<double>(r, 7, shapes, DType::f64, eig), 1e-9);
  EXPECT_LT(run_against_reference<float>(r, 5, shapes, DType::f32, eig), 2e-4);
}

// KL-Shampoo with cached inverse roots and with a cached eigendecomposition: 2-D and 3-D blocks
// take the other modes' roots (identity until the first amortized step), a 1-D block its gradient.
TEST(ShampooStep, KlShampooFollowsTheReference) {
  for (auto type : {PreconditionerType::shampoo, PreconditionerType::eigendecomposed}) {
    ReferenceOptions r;
    r.kl = true;
    r.beta2 = 0.95;
    r.epsilon = 1e-6;
    EXPECT_LT(run_against_reference<double>(r, 6, shapes, DType::f64, type), 1e-9)
        << preconditioner_name(type);
    r.frequency = 2;
    r.start = 4;
    r.grafting = 2;
    r.exponent[3] = {{0, 0.0}};  // 3-D blocks: dim 0 not preconditioned, the others see dim 1/2
    EXPECT_LT(run_against_reference<double>(r, 7, shapes, DType::f64, type), 1e-9)
        << preconditioner_name(type);
  }
  // KL changes the step: the same run without it ends elsewhere.
  ReferenceOptions kl, plain;
  kl.kl = true;
  kl.beta2 = plain.beta2 = 0.95;
  std::vector<std::vector<long>> const one = {{4, 3}};
  std::mt19937 rng(7);
  std::vector<double> w1 = random_values(rng, 12, 1.0), w2 = w1;
  Shampoo<double> a(plan_for(kl, one), to_options(kl)), b(plan_for(plain, one), to_options(plain));
  for (int t = 0; t < 3; ++t) {
    std::vector<double> const g = random_values(rng, 12, 0.5);
    a.step({std::span<double>(w1)}, {std::span<double const>(g)});
    b.step({std::span<double>(w2)}, {std::span<double const>(g)});
  }
  EXPECT_NE(w1, w2);
}

// Iterate averaging: generalized primal averaging and schedule-free against the reference's
// y, z sequences, with grafting, decoupled and L2 weight decay, amortization and float.
TEST(ShampooStep, IterateAveragingFollowsTheReference) {
  for (int kind : {1, 2}) {
    ReferenceOptions r;
    r.averaging = kind;
    r.lr = 0.05;
    EXPECT_LT(run_against_reference<double>(r), 1e-9) << "averaging " << kind;
    r.mu_x = 0.5;
    r.mu_y = 1.0;  // heavy ball
    r.lr_power = 1.0;
    r.beta2 = 0.95;
    r.frequency = 2;
    r.grafting = 4;
    r.graft_beta2 = 0.999;
    r.weight_decay = 0.01;
    r.epsilon = 1e-6;  // as in EigendecomposedFollowsTheReference: well-posed early roots
    EXPECT_LT(run_against_reference<double>(r, 7), 1e-9) << "averaging " << kind;
    r.l2 = true;
    EXPECT_LT(run_against_reference<double>(r, 7), 1e-9) << "averaging " << kind;
    EXPECT_LT(run_against_reference<float>(r, 5, shapes, DType::f32), 2e-4) << "averaging " << kind;
  }
}

// eval() moves the parameters to x = y + (1 - 1 / mu_y)(z - y) and train() back; step() is refused
// in between; the state (z, lr_sum, train_mode) resumes bit for bit; the options' errors.
TEST(ShampooStep, IterateAveragingEvalTrainAndState) {
  ReferenceOptions r;
  r.averaging = 2;
  r.lr = 0.05;
  std::vector<std::vector<long>> const one = {{4, 3}};
  Options const o = to_options(r);
  Shampoo<double> opt(plan_for(r, one), o);
  std::mt19937 rng(3);
  std::vector<double> w = random_values(rng, 12, 1.0);
  std::vector<std::vector<double>> g;
  for (int t = 0; t < 4; ++t) g.push_back(random_values(rng, 12, 0.5));
  opt.eval({std::span<double>(w)});  // before any step z = y: nothing moves
  EXPECT_FALSE(opt.training());
  opt.train({std::span<double>(w)});
  StateDict mid;
  std::vector<double> w_mid;
  for (int t = 0; t < 4; ++t) {
    opt.step({std::span<double>(w)}, {std::span<double const>(g[static_cast<std::size_t>(t)])});
    if (t == 1) {
      mid = opt.state_dict();
      w_mid = w;
    }
  }
  StateDict const state = opt.state_dict();
  auto const& zt = state.at({"0", "block_0", "weight_buffer"}).data;
  std::vector<double> z(12);
  std::memcpy(z.data(), zt.data(), zt.size());
  double lr_sum = 0.0;
  std::memcpy(&lr_sum, state.at({"0", "lr_sum"}).data.data(), sizeof lr_sum);
  EXPECT_NEAR(lr_sum, 4 * 0.05 * 0.05, 1e-15);
  std::vector<double> const y = w;
  opt.eval({std::span<double>(w)});
  EXPECT_FALSE(opt.training());
  EXPECT_EQ(opt.state_dict().at({"0", "train_mode"}).data[0], std::byte{0});
  for (std::size_t i = 0; i < 12; ++i)
    EXPECT_NEAR(w[i], y[i] + (1.0 - 1.0 / 0.8) * (z[i] - y[i]), 1e-14);
  EXPECT_EQ(error_of([&] { opt.step({std::span<double>(w)}, {std::span<double const>(g[0])}); }),
            "step() in eval mode: with iterate averaging the parameters hold the averaged sequence "
            "between eval() and train(); call train() first.");
  opt.train({std::span<double>(w)});
  for (std::size_t i = 0; i < 12; ++i) EXPECT_NEAR(w[i], y[i], 1e-14);
  // Resumed from step 2, steps 3 and 4 give the same parameters bit for bit.
  Shampoo<double> resumed(plan_for(r, one), o);
  resumed.load_state_dict(mid);
  for (int t = 2; t < 4; ++t)
    resumed.step({std::span<double>(w_mid)},
                 {std::span<double const>(g[static_cast<std::size_t>(t)])});
  EXPECT_EQ(w_mid, y);
  std::vector<double> updates(12);
  EXPECT_NE(error_of([&] {
              resumed.compute_updates({std::span<double>(w_mid)}, {std::span<double const>(g[0])},
                                      updates);
            }).find("compute_updates and the distributed optimizers do not support it"),
            std::string::npos);

  Options bad = o;
  bad.momentum = 0.9;
  EXPECT_EQ(error_of([&] { validate(bad); }),
            "momentum 0.9 and iterate averaging schedule-free exclude each other (Distributed "
            "Shampoo's iterate_averaging_config is one of them); set momentum 0.");
  bad = o;
  bad.averaging.train_interp_coeff = 0.0;
  EXPECT_EQ(error_of([&] { validate(bad); }), "train_interp_coeff must be in (0, 1], got 0.");
  bad = o;
  bad.averaging.type = AveragingType::generalized_primal;
  bad.averaging.eval_interp_coeff = 1.0;
  EXPECT_EQ(error_of([&] { validate(bad); }), "eval_interp_coeff must be in [0, 1), got 1.");
  bad = o;
  bad.averaging.eval_coeff_lr_power = std::numeric_limits<double>::infinity();
  EXPECT_EQ(error_of([&] { validate(bad); }), "eval_coeff_lr_power must be finite, got inf.");
  bad = o;
  bad.averaging.type = static_cast<AveragingType>(7);
  EXPECT_EQ(error_of([&] { validate(bad); }), "iterate averaging type 7 is not an AveragingType.");
  Options warned;
  warned.averaging.type = AveragingType::generalized_primal;
  warned.averaging.eval_coeff_lr_power = 1.0;
  EXPECT_EQ(ignored_options(warned),
            std::vector<std::string>{"eval_coeff_lr_power 1 has no effect with iterate averaging "
                                     "generalized primal averaging (schedule-free uses it)."});
  warned = Options{};
  warned.averaging.type = AveragingType::schedule_free;
  warned.averaging.eval_interp_coeff = 0.5;
  EXPECT_EQ(ignored_options(warned),
            std::vector<std::string>{"eval_interp_coeff 0.5 has no effect with iterate averaging "
                                     "schedule-free (generalized primal averaging uses it)."});
  warned = Options{};
  warned.averaging.train_interp_coeff = 0.5;
  EXPECT_EQ(
      ignored_options(warned),
      std::vector<std::string>{"train_interp_coeff 0.5 has no effect without iterate averaging."});
  EXPECT_EQ(error_of([&] { opt.eval(std::vector<std::span<double>>{}); }),
            "eval got 0 parameters but the plan has 1.");
  GroupedShampoo<double> grouped({{4, 3}}, {ParamGroup{{0}, o}});
  EXPECT_EQ(error_of([&] { grouped.train(std::vector<std::span<double>>{}); }),
            "train got 0 parameters but the optimizer has 1 parameters.");
  // Two parameters share one lr_sum: a state where they differ is refused, nothing loaded.
  std::vector<std::vector<long>> const two = {{4, 3}, {5}};
  Shampoo<double> pair(plan_for(r, two), o);
  std::vector<double> w5 = random_values(rng, 5, 1.0), g5 = random_values(rng, 5, 0.5);
  pair.step({std::span<double>(w_mid), std::span<double>(w5)},
            {std::span<double const>(g[0]), std::span<double const>(g5)});
  StateDict uneven = pair.state_dict();
  double const other = 1.0;
  std::memcpy(uneven.at({"1", "lr_sum"}).data.data(), &other, sizeof other);
  EXPECT_EQ(error_of([&] { pair.load_state_dict(uneven); }),
            "the state's lr_sum of parameter 1 differs from parameter 0's; all parameters share "
            "one lr_sum.");
}

}  // namespace
