// Every error of the optimizer with its sentence: invalid hyper-parameters, step arguments
// (checked before anything is written), NaN/Inf in a factor matrix, and too many failed inverse
// roots in a row (the previous roots are kept until then); parameters are untouched on each.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <tessel/shampoo/optimizer.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;

using tessel::test::error_of;

std::string invalid(void (*change)(Options&)) {
  Options o;
  change(o);
  return error_of([&] { validate(o); });
}

TEST(ShampooOptions, DefaultsAreDistributedShampoos) {
  Options o;
  EXPECT_EQ(o.lr, 1e-2);
  EXPECT_EQ(o.beta1, 0.9);
  EXPECT_EQ(o.beta2, 1.0);
  EXPECT_EQ(o.epsilon, 1e-12);
  EXPECT_EQ(o.momentum, 0.0);
  EXPECT_EQ(o.weight_decay, 0.0);
  EXPECT_EQ(o.weight_decay_type, WeightDecayType::decoupled);
  EXPECT_EQ(o.precondition_frequency, 1);
  EXPECT_EQ(o.start_preconditioning_step, -1);
  EXPECT_EQ(resolved_start_step(o), 1);
  EXPECT_TRUE(o.use_bias_correction);
  EXPECT_EQ(o.grafting.type, GraftingType::none);
  EXPECT_EQ(o.root.method, RootMethod::eigen);
  EXPECT_EQ(o.root.coupled_newton.max_iterations, 100);
  EXPECT_EQ(o.root.coupled_newton.tolerance, 1e-6);
  EXPECT_EQ(o.factor_matrix_dtype, DType::f32);
  EXPECT_EQ(o.num_tolerated_failed_amortized_computations, 3);
  EXPECT_EQ(rmsprop_grafting().beta2, 0.99);
  EXPECT_EQ(adam_grafting().beta2, 0.999);
  EXPECT_EQ(adagrad_grafting().epsilon, 1e-10);
  EXPECT_EQ(error_of([] { validate(Options{}); }), "no error");
}

std::vector<std::string> ignored(void (*change)(Options&)) {
  Options o;
  change(o);
  return ignored_options(o);
}

TEST(ShampooOptions, EveryOptionWithoutEffectIsNamed) {
  using V = std::vector<std::string>;
  EXPECT_EQ(ignored_options(Options{}), V{});
  EXPECT_EQ(ignored([](Options& o) {
              o.use_nesterov = true;
              o.dampening = 0.5;
            }),
            (V{"dampening 0.5 has no effect with momentum 0.",
               "use_nesterov has no effect with momentum 0."}));
  EXPECT_EQ(ignored([](Options& o) {
              o.use_nesterov = true;
              o.dampening = 0.5;
              o.momentum = 0.9;
            }),
            V{});
  EXPECT_EQ(ignored([](Options& o) { o.weight_decay_type = WeightDecayType::l2; }),
            V{"weight_decay_type l2 has no effect with weight_decay 0."});
  EXPECT_EQ(ignored([](Options& o) {
              o.grafting = {GraftingType::sgd, 0.9, 1e-8, false};
            }),
            (V{"grafting beta2 0.9 has no effect with sgd grafting (rmsprop and adam use it).",
               "grafting epsilon 1e-08 has no effect with sgd grafting (adagrad, rmsprop and adam "
               "use it)."}));
  EXPECT_EQ(ignored([](Options& o) {
              o.grafting = {GraftingType::adagrad, 0.9, 1e-8, false};
            }),
            V{"grafting beta2 0.9 has no effect with adagrad grafting (rmsprop and adam use it)."});
  EXPECT_EQ(ignored([](Options& o) { o.grafting = adam_grafting(0.9, 1e-8); }), V{});
  EXPECT_EQ(ignored([](Options& o) { o.root.coupled_newton.max_iterations = 10; }),
            V{"coupled Newton's max_iterations 10 and tolerance 1e-06 have no effect with the "
              "eigen root method."});
  EXPECT_EQ(ignored([](Options& o) { o.root.eigen.rank_rtol = 1e-5; }),
            V{"rank_atol 0 and rank_rtol 1e-05 have no effect without the pseudo-inverse."});
  EXPECT_EQ(ignored([](Options& o) {
              o.epsilon = 0.0;
              o.root.eigen.pseudo_inverse = true;
              o.root.eigen.perturb_before_computation = false;
            }),
            V{"perturb_before_computation false has no effect with the pseudo-inverse, which "
              "never perturbs."});
  EXPECT_EQ(ignored([](Options& o) {
              o.root.method = RootMethod::coupled_newton;
              o.root.eigen.retry_double_precision = false;
            }),
            V{"the eigen root settings (pseudo_inverse false, rank_atol 0, rank_rtol 0, "
              "perturb_before_computation true, retry_double_precision false) have no effect "
              "with the coupled Newton root method."});
}

TEST(ShampooOptions, TheOptimizerHandsEachIgnoredOptionToTheWarningHandler) {
  std::vector<std::string> seen;
  auto previous = set_warning_handler([&](std::string_view s) { seen.emplace_back(s); });
  Options o;
  o.use_nesterov = true;
  auto plan = make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{4}});
  Shampoo<float> opt(plan, o);
  set_warning_handler(std::move(previous));
  EXPECT_EQ(seen, std::vector<std::string>{"use_nesterov has no effect with momentum 0."});
}

TEST(ShampooOptions, EveryHyperParameterIsValidated) {
  EXPECT_EQ(invalid([](Options& o) { o.lr = -0.1; }), "lr must be >= 0, got -0.1.");
  EXPECT_EQ(invalid([](Options& o) { o.lr = std::nan(""); }), "lr must be >= 0, got nan.");
  EXPECT_EQ(invalid([](Options& o) { o.beta1 = 1.0; }), "beta1 must be in [0, 1), got 1.");
  EXPECT_EQ(invalid([](Options& o) { o.beta2 = -0.5; }), "beta2 must be in [0, 1], got -0.5.");
  EXPECT_EQ(invalid([](Options& o) { o.beta2 = 1.5; }), "beta2 must be in [0, 1], got 1.5.");
  EXPECT_EQ(invalid([](Options& o) { o.beta2 = 0.0; }), "no error");  // Distributed Shampoo's too
  EXPECT_EQ(invalid([](Options& o) { o.beta3 = 1.5; }),
            "beta3 must be -1 (equal to beta1) or in [0, 1), got 1.5.");
  EXPECT_EQ(invalid([](Options& o) { o.epsilon = 0.0; }), "epsilon must be > 0, got 0.");
  EXPECT_EQ(invalid([](Options& o) { o.root.eigen.pseudo_inverse = true; }),
            "epsilon must be 0 when the pseudo-inverse is used, got 1e-12.");
  EXPECT_EQ(invalid([](Options& o) { o.momentum = 1.0; }), "momentum must be in [0, 1), got 1.");
  EXPECT_EQ(invalid([](Options& o) { o.dampening = -0.5; }),
            "dampening must be in [0, 1), got -0.5.");
  EXPECT_EQ(invalid([](Options& o) { o.weight_decay = -1e-4; }),
            "weight_decay must be >= 0, got -1e-04.");
  EXPECT_EQ(invalid([](Options& o) { o.precondition_frequency = 0; }),
            "precondition_frequency must be >= 1, got 0.");
  EXPECT_EQ(invalid([](Options& o) { o.start_preconditioning_step = -2; }),
            "start_preconditioning_step must be >= -1, got -2.");
  EXPECT_EQ(invalid([](Options& o) {
              o.precondition_frequency = 10;
              o.start_preconditioning_step = 5;
            }),
            "start_preconditioning_step must be >= precondition_frequency (10), got 5.");
  EXPECT_EQ(invalid([](Options& o) { o.grafting = rmsprop_grafting(1.5); }),
            "grafting beta2 must be in (0, 1], got 1.5.");
  EXPECT_EQ(invalid([](Options& o) { o.grafting = adagrad_grafting(0.0); }),
            "grafting epsilon must be > 0, got 0.");
  EXPECT_EQ(invalid([](Options& o) { o.inverse_exponent_override[-1] = 0.5; }),
            "inverse_exponent_override has the order -1; orders must be >= 0.");
  EXPECT_EQ(invalid([](Options& o) { o.inverse_exponent_override[2] = -0.5; }),
            "inverse_exponent_override[2] is -0.5; exponents must be >= 0.");
  EXPECT_EQ(invalid([](Options& o) {
              o.inverse_exponent_override[2] = std::map<index_t, double>{{2, 0.5}};
            }),
            "inverse_exponent_override[2] names dimension 2; dimensions must be in [0, 1].");
  EXPECT_EQ(invalid([](Options& o) {
              o.inverse_exponent_override[3] = std::map<index_t, double>{{1, -1.0}};
            }),
            "inverse_exponent_override[3][1] is -1; exponents must be >= 0.");
  EXPECT_EQ(invalid([](Options& o) {
              o.root.method = RootMethod::coupled_newton;
              o.root.coupled_newton.max_iterations = 0;
            }),
            "coupled Newton max_iterations must be >= 1, got 0.");
  EXPECT_EQ(invalid([](Options& o) {
              o.root.method = RootMethod::coupled_newton;
              o.root.coupled_newton.tolerance = 0.0;
            }),
            "coupled Newton tolerance must be > 0, got 0.");
  EXPECT_EQ(invalid([](Options& o) { o.root.eigen.rank_atol = -1.0; }),
            "rank_atol must be >= 0, got -1.");
  EXPECT_EQ(invalid([](Options& o) { o.root.eigen.rank_rtol = -1.0; }),
            "rank_rtol must be >= 0, got -1.");
  EXPECT_EQ(invalid([](Options& o) { o.factor_matrix_dtype = DType::i32; }),
            "factor_matrix_dtype must be bf16, f16, f32 or f64, got i32.");
  EXPECT_EQ(invalid([](Options& o) { o.num_tolerated_failed_amortized_computations = -1; }),
            "num_tolerated_failed_amortized_computations must be >= 0, got -1.");
}

Plan small_plan() {
  return make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                   std::vector<std::vector<index_t>>{{3, 2}, {4}});
}

TEST(ShampooConstruction, RejectsInvalidOptionsAndRoots) {
  Options o;
  o.lr = -1.0;
  EXPECT_EQ(error_of([&] { Shampoo<float>(small_plan(), o); }), "lr must be >= 0, got -1.");
  Options n;
  n.root.method = RootMethod::coupled_newton;
  n.inverse_exponent_override[1] = 0.4;  // root 2.5
  EXPECT_EQ(error_of([&] { Shampoo<float>(small_plan(), n); }),
            "inverse_exponent_override gives dimension 0 of 1-D blocks the exponent 0.4, but "
            "coupled Newton needs a whole-number root, got 2.5.");
  Shampoo<float> opt(small_plan());
  EXPECT_EQ(error_of([&] { opt.set_lr(-2.0); }), "lr must be >= 0, got -2.");
}

// Runs one step and checks that an error leaves parameters, step count and state unchanged.
template <class T>
std::string failed_step(Shampoo<T>& opt, std::vector<std::vector<T>>& params,
                        std::vector<std::vector<T>> const& grads) {
  auto const before_params = params;
  auto const before_state = opt.state_dict();
  auto const before_step = opt.step_count();
  std::vector<std::span<T>> ps(params.begin(), params.end());
  std::vector<std::span<T const>> gs(grads.begin(), grads.end());
  std::string const e = error_of([&] { opt.step(ps, gs); });
  EXPECT_EQ(params, before_params);
  EXPECT_EQ(opt.step_count(), before_step);
  EXPECT_TRUE(opt.state_dict() == before_state);
  return e;
}

TEST(ShampooStepErrors, ArgumentsAreCheckedBeforeAnyWrite) {
  Shampoo<float> opt(small_plan());
  std::vector<std::vector<float>> params{std::vector<float>(6, 1.0f), std::vector<float>(4, 1.0f)};
  std::vector<std::vector<float>> grads{std::vector<float>(6, 0.5f), std::vector<float>(4, 0.5f)};
  std::vector<std::vector<float>> one{params[0]};
  std::vector<std::span<float>> ps(one.begin(), one.end());
  std::vector<std::span<float const>> gs(grads.begin(), grads.end());
  EXPECT_EQ(error_of([&] { opt.step(ps, gs); }), "step got 1 parameters but the plan has 2.");
  std::vector<std::span<float>> ps2(params.begin(), params.end());
  std::vector<std::span<float const>> gs1(grads.begin(), grads.begin() + 1);
  EXPECT_EQ(error_of([&] { opt.step(ps2, gs1); }), "step got 1 gradients but the plan has 2.");
  auto short_param = params;
  short_param[1].pop_back();
  EXPECT_EQ(failed_step(opt, short_param, grads),
            "parameter 1 has 3 elements but its planned shape (4) has 4.");
  auto short_grad = grads;
  short_grad[0].push_back(0.0f);
  EXPECT_EQ(failed_step(opt, params, short_grad),
            "the gradient of parameter 0 has 7 elements but its planned shape (3,2) has 6.");
  auto nan_grad = grads;
  nan_grad[1][2] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(
      failed_step(opt, params, nan_grad),
      "the gradient of parameter 1 has the value nan at element 2; gradients must be finite.");
  auto inf_grad = grads;
  inf_grad[0][5] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(
      failed_step(opt, params, inf_grad),
      "the gradient of parameter 0 has the value -inf at element 5; gradients must be finite.");
}

TEST(ShampooStepErrors, AGradientThatWouldOverflowAFactorChangesNothing) {
  // A finite gradient of 2^100 would overflow g g^T in float: the bound on the new factor
  // entries (max_ij beta2 |F_ij| + w sqrt(r_i r_j), r_i the squared norm of slice i) is checked
  // before anything is written, so the step fails with parameters, step count and state unchanged.
  auto plan = make_plan(PlanOptions<index_t, index_t>{2, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{3}, {2, 4}});
  Shampoo<float> opt(plan);
  std::vector<std::vector<float>> params{std::vector<float>(3, 1.0f), std::vector<float>(8, 1.0f)};
  std::vector<std::vector<float>> grads{std::vector<float>(3, 0.5f), std::vector<float>(8, 0.5f)};
  grads[1][6] = 0x1p100f;  // element (1, 2): block 1 of parameter 1
  EXPECT_EQ(failed_step(opt, params, grads),
            "factor matrix 0 of parameter 1, block 1 would overflow at step 1: its largest entry "
            "could reach 1.6069380442589903e+60 (1 times the old entry plus 1 times the gradient's "
            "part, whose squared row norms along mode 0 reach 1.6069380442589903e+60), more than "
            "f32 holds (3.4028234663852886e+38); nothing was changed.");
  // The next good step is the first step.
  grads[1][6] = 0.5f;
  std::vector<std::span<float>> ps(params.begin(), params.end());
  std::vector<std::span<float const>> gs(grads.begin(), grads.end());
  opt.step(ps, gs);
  EXPECT_EQ(opt.step_count(), 1);
}

TEST(ShampooStepErrors, BiasCorrectedAndNarrowFactorsAreBoundedToo) {
  // beta2 = 0.99: the new entries (0.01 * 2^130) fit float, but the root is computed from them
  // divided by the bias correction 1 - 0.99 = 0.01, which would not.
  auto plan = make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{4}});
  Options o;
  o.beta2 = 0.99;
  Shampoo<float> opt(plan, o);
  std::vector<std::vector<float>> params{std::vector<float>(4, 1.0f)};
  std::vector<std::vector<float>> grads{{0x1p65f, 0.0f, 0.0f, 0.0f}};
  EXPECT_EQ(failed_step(opt, params, grads),
            "factor matrix 0 of parameter 0, block 0 would overflow at step 1: divided by the "
            "bias correction, its largest entry could reach 1.3611294372601382e+39 (0.99 times "
            "the old entry plus 0.01 times the gradient's part, whose squared row norms along "
            "mode 0 reach 1.361129467683754e+39), more than f32 holds (3.4028234663852886e+38); "
            "nothing was changed.");
  // Factors stored as f16 hold at most 65504: a gradient entry of 256 (256^2 = 65536) would
  // store Inf, which the old check only saw at the next root computation.
  Options h;
  h.factor_matrix_dtype = DType::f16;
  Shampoo<float> narrow(plan, h);
  grads[0] = {256.0f, 1.0f, 0.0f, 0.0f};
  EXPECT_EQ(failed_step(narrow, params, grads),
            "factor matrix 0 of parameter 0, block 0 would overflow at step 1: its largest entry "
            "could reach 65536 (1 times the old entry plus 1 times the gradient's part, whose "
            "squared row norms along mode 0 reach 65536), more than f16 holds (65504); nothing "
            "was changed.");
  grads[0] = {255.0f, 1.0f, 0.0f, 0.0f};  // 65025 fits
  std::vector<std::span<float>> ps(params.begin(), params.end());
  std::vector<std::span<float const>> gs(grads.begin(), grads.end());
  narrow.step(ps, gs);
  EXPECT_EQ(narrow.factor_matrix(0, 0)[0], 65024.0f);  // 65025 rounded to f16
}

TEST(ShampooStepErrors, TheBoundIsTheNewFactorsLargestEntry) {
  // f16 factors, gradients (200, 0) then (0, 200): the factor becomes diag(40000, 40000), which
  // f16 holds. A bound adding the largest old entry to the largest new row norm (80000) would
  // refuse step 2; the per-entry bound is the largest new entry itself for PSD factors. Step 3's
  // gradient (200, 200) adds 40000 to every entry: the diagonal would reach 80000, refused.
  auto plan = make_plan(PlanOptions<index_t, index_t>{2, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{2}});
  Options o;
  o.factor_matrix_dtype = DType::f16;
  o.epsilon = 0.01;
  Shampoo<float> opt(plan, o);
  std::vector<std::vector<float>> params{{0.5f, -0.3f}};
  std::vector<std::span<float>> ps(params.begin(), params.end());
  for (std::vector<float> g : {std::vector<float>{200.0f, 0.0f}, {0.0f, 200.0f}}) {
    std::vector<std::span<float const>> gs{std::span<float const>(g)};
    opt.step(ps, gs);
  }
  auto const f = opt.factor_matrix(0, 0);
  EXPECT_EQ(f[0], 40000.0f);
  EXPECT_EQ(f[1], 0.0f);
  EXPECT_EQ(f[3], 40000.0f);
  std::vector<std::vector<float>> grads{{200.0f, 200.0f}};
  EXPECT_EQ(failed_step(opt, params, grads),
            "factor matrix 0 of parameter 0, block 0 would overflow at step 3: its largest entry "
            "could reach 80000 (1 times the old entry plus 1 times the gradient's part, whose "
            "squared row norms along mode 0 reach 40000), more than f16 holds (65504); nothing "
            "was changed.");
  EXPECT_EQ(opt.step_count(), 2);
}

TEST(ShampooStepErrors, ALoadedStateIsBoundedFromItsFactorsNotFromBeforeTheLoad) {
  // The step's cheap bound uses the previous step's bound on max|F|; a loaded state resets it to
  // unknown, so the first step after a load reads the factors. Here the loaded f16 factor holds
  // 60000 on its diagonal: gradient (100, 0) would take it to 70000, more than f16 holds, though
  // a fresh optimizer's bound (zero factors) would have let it pass.
  auto plan = make_plan(PlanOptions<index_t, index_t>{2, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{2}});
  Options o;
  o.factor_matrix_dtype = DType::f16;
  o.epsilon = 0.01;
  Shampoo<float> source(plan, o);
  std::vector<std::vector<float>> params{{0.5f, -0.3f}};
  std::vector<std::span<float>> ps(params.begin(), params.end());
  std::vector<float> g{std::sqrt(60000.0f), 0.0f};
  source.step(ps, {std::span<float const>(g)});
  ASSERT_EQ(source.factor_matrix(0, 0)[0], 60000.0f);
  Shampoo<float> loaded(plan, o);
  loaded.load_state_dict(source.state_dict());
  std::vector<std::vector<float>> grads{{100.0f, 0.0f}};
  EXPECT_EQ(failed_step(loaded, params, grads),
            "factor matrix 0 of parameter 0, block 0 would overflow at step 2: its largest entry "
            "could reach 70000 (1 times the old entry plus 1 times the gradient's part, whose "
            "squared row norms along mode 0 reach 10000), more than f16 holds (65504); nothing "
            "was changed.");
}

TEST(ShampooStep, DroppedWeightingTraceScalingAndPeakLrWeightDecays) {
  auto plan = make_plan(PlanOptions<index_t, index_t>{2, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{2}});
  auto run = [&](Options const& o, std::vector<std::vector<double>> const& grads,
                 double set_lr = -1.0) {
    Shampoo<double> opt(plan, o);
    if (set_lr >= 0.0) opt.set_lr(set_lr);
    std::vector<double> w{0.5, -0.25};
    for (auto const& g : grads) opt.step({std::span<double>(w)}, {std::span<double const>(g)});
    return std::pair{w, opt.state_dict()};
  };
  auto tensor = [](StateDict const& s, std::vector<std::string> key) {
    auto const& t = s.at(key);
    std::vector<double> v(t.data.size() / sizeof(double));
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
  };
  // Factors without the (1 - beta2) weight: F = 0.9 g1 g1^T + g2 g2^T, no bias correction.
  Options drop;
  drop.beta2 = 0.9;
  drop.drop_weighting_factor_on_gsquare = true;
  drop.factor_matrix_dtype = DType::f64;
  drop.grafting = adam_grafting();
  drop.grafting.drop_weighting_factor_on_gsquare = true;
  auto const [w, state] = run(drop, {{1.0, 2.0}, {3.0, -1.0}});
  EXPECT_EQ(tensor(state, {"0", "block_0", "shampoo", "factor_matrices", "0"}),
            (std::vector<double>{0.9 * 1 + 9, 0.9 * 2 - 3, 0.9 * 2 - 3, 0.9 * 4 + 1}));
  // The Adam grafting accumulator likewise: 0.999 g1^2 + g2^2.
  EXPECT_EQ(tensor(state, {"0", "block_0", "adagrad"}),
            (std::vector<double>{0.999 * 1 + 9, 0.999 * 4 + 1}));
  // Trace scaling: for g = (3, 4), F = g g^T has trace 25; F / sqrt(25) has g as an eigenvector
  // with eigenvalue 5, so the update is lr g / sqrt(5 + epsilon) (25 without scaling). The
  // other eigenvalue is 0: epsilon 1e-12 turns the rounding of g's component there (1e-16) into
  // about 1e-10.
  Options trace;
  trace.beta1 = 0.0;
  trace.lr = 1.0;
  trace.use_trace_scaling = true;
  trace.factor_matrix_dtype = DType::f64;
  auto const scaled = run(trace, {{3.0, 4.0}}).first;
  EXPECT_NEAR(scaled[0], 0.5 - 3.0 / std::sqrt(5.0), 1e-9);
  EXPECT_NEAR(scaled[1], -0.25 - 4.0 / std::sqrt(5.0), 1e-9);
  trace.use_trace_scaling = false;
  EXPECT_NEAR(run(trace, {{3.0, 4.0}}).first[0], 0.5 - 3.0 / 5.0, 1e-9);
  // Corrected and independent decay divide by the lr the optimizer was built with (0.1), at
  // the lr of the step (0.05): a zero gradient leaves the decay alone in the update.
  Options decay;
  decay.beta1 = 0.0;
  decay.lr = 0.1;
  decay.weight_decay = 0.1;
  decay.weight_decay_type = WeightDecayType::corrected;
  auto const corrected = run(decay, {{0.0, 0.0}}, 0.05).first;
  EXPECT_NEAR(corrected[0], 0.5 * (1 - 0.05 * 0.1 * 0.05 / 0.1), 1e-15);
  decay.weight_decay_type = WeightDecayType::independent;
  auto const independent = run(decay, {{0.0, 0.0}}, 0.05).first;
  EXPECT_NEAR(independent[0], 0.5 * (1 - 0.05 * 0.1 / 0.1), 1e-15);
  decay.lr = 0.0;
  EXPECT_EQ(error_of([&] { validate(decay); }),
            "lr must be > 0 with independent weight decay, which divides by the lr the optimizer "
            "is built with, got 0.");
  Options t;
  t.use_trace_scaling = true;
  t.trace_scaling_exponent = 1.5;
  EXPECT_EQ(error_of([&] { validate(t); }),
            "trace_scaling_exponent must be in (0, 1] with use_trace_scaling, got 1.5.");
  t.use_trace_scaling = false;
  t.drop_weighting_factor_on_gsquare = true;
  t.grafting = sgd_grafting();
  t.grafting.drop_weighting_factor_on_gsquare = true;
  EXPECT_EQ(ignored_options(t),
            (std::vector<std::string>{
                "trace_scaling_exponent 1.5 has no effect without use_trace_scaling.",
                "drop_weighting_factor_on_gsquare has no effect with beta2 1 (the weight is "
                "already 1 and there is no bias correction).",
                "grafting drop_weighting_factor_on_gsquare has no effect with sgd grafting "
                "(rmsprop and adam use it)."}));
}

TEST(ShampooStepErrors, BetaTwoZeroKeepsOnlyTheLatestOuterProduct) {
  // beta2 = 0 (Distributed Shampoo accepts [0, 1]): F = G G^T of the current step alone, and no
  // bias correction (1 - 0^t = 1). The bound ignores the old factor (0 * |F|).
  auto plan = make_plan(PlanOptions<index_t, index_t>{2, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{2}});
  Options o;
  o.beta2 = 0.0;
  Shampoo<float> opt(plan, o);
  std::vector<std::vector<float>> params{{0.5f, -0.3f}};
  std::vector<std::span<float>> ps(params.begin(), params.end());
  for (std::vector<float> g : {std::vector<float>{3.0f, 1.0f}, {1.0f, 2.0f}}) {
    std::vector<std::span<float const>> gs{std::span<float const>(g)};
    opt.step(ps, gs);
  }
  auto const f = opt.factor_matrix(0, 0);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], 2.0f);
  EXPECT_EQ(f[2], 2.0f);
  EXPECT_EQ(f[3], 4.0f);
}

TEST(ShampooStepErrors, NonFiniteFactorNamesParameterAndBlock) {
  // A factor that already holds Inf (only a loaded state can: finite gradients that would
  // overflow are refused up front) is found at the first inverse-root computation, after the
  // factors of the step were accumulated; the parameters are untouched.
  auto plan = make_plan(PlanOptions<index_t, index_t>{2, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{3}, {2, 4}});
  Shampoo<float> opt(plan);
  StateDict state = opt.state_dict();
  float const inf = std::numeric_limits<float>::infinity();
  auto& factor = state.at({"1", "block_1", "shampoo", "factor_matrices", "0"}).data;
  std::memcpy(factor.data() + 3 * sizeof(float), &inf, sizeof inf);
  opt.load_state_dict(state);
  std::vector<std::vector<float>> params{std::vector<float>(3, 1.0f), std::vector<float>(8, 1.0f)};
  std::vector<std::vector<float>> grads{std::vector<float>(3, 0.5f), std::vector<float>(8, 0.5f)};
  auto const before = params;
  std::vector<std::span<float>> ps(params.begin(), params.end());
  std::vector<std::span<float const>> gs(grads.begin(), grads.end());
  EXPECT_EQ(error_of([&] { opt.step(ps, gs); }),
            "factor matrix 0 of parameter 1, block 1 has NaN or Inf values at step 1.");
  EXPECT_EQ(params, before);
}

TEST(ShampooStepErrors, AnInverseRootThatOverflowsNamesParameterAndBlock) {
  // epsilon 1e-300 is valid (> 0) but 0 in float, so a zero factor (zero gradients) keeps the
  // eigenvalue 0 and its inverse root is Inf: the factor is finite, the root is not. Found after
  // the factors were accumulated; the parameters are untouched.
  Options o;
  o.epsilon = 1e-300;
  auto plan = make_plan(PlanOptions<index_t, index_t>{4, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{3}});
  Shampoo<float> opt(plan, o);
  std::vector<std::vector<float>> params{{1.0f, -2.0f, 3.0f}};
  std::vector<std::vector<float>> grads{{0.0f, 0.0f, 0.0f}};
  auto const before = params;
  std::vector<std::span<float>> ps(params.begin(), params.end());
  std::vector<std::span<float const>> gs(grads.begin(), grads.end());
  EXPECT_EQ(error_of([&] { opt.step(ps, gs); }),
            "the inverse root of factor matrix 0 of parameter 0, block 0 has NaN or Inf values at "
            "step 1.");
  EXPECT_EQ(params, before);
  // In double the same epsilon is representable: the root is finite and the step goes through.
  Shampoo<double> opt64(plan, o);
  std::vector<std::vector<double>> p64{{1.0, -2.0, 3.0}};
  std::vector<std::vector<double>> g64{{0.0, 0.0, 0.0}};
  std::vector<std::span<double>> ps64(p64.begin(), p64.end());
  std::vector<std::span<double const>> gs64(g64.begin(), g64.end());
  EXPECT_EQ(error_of([&] { opt64.step(ps64, gs64); }), "no error");
}

TEST(ShampooStepErrors, FailedRootsKeepThePreviousOnesUntilTheToleranceIsExceeded) {
  Options o;
  o.root.method = RootMethod::coupled_newton;
  o.root.coupled_newton.max_iterations = 1;  // never reaches the tolerance
  auto plan = make_plan(PlanOptions<index_t, index_t>{8, 1, 1, DType::f32},
                        std::vector<std::vector<index_t>>{{4}});
  Shampoo<double> opt(plan, o);
  std::vector<std::vector<double>> params{{1.0, 2.0, 3.0, 4.0}};
  std::vector<std::vector<double>> grads{{0.5, -1.0, 0.25, 2.0}};
  std::vector<std::span<double>> ps(params.begin(), params.end());
  std::vector<std::span<double const>> gs(grads.begin(), grads.end());
  for (int t = 1; t <= 3; ++t) {
    opt.step(ps, gs);
    EXPECT_EQ(opt.failed_amortized_computations(0), t);
    auto X = opt.inverse_root(0, 0);  // still the initial identity
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        EXPECT_EQ(X[static_cast<std::size_t>(i * 4 + j)], i == j ? 1.0 : 0.0);
  }
  auto const before = params;
  EXPECT_EQ(error_of([&] { opt.step(ps, gs); }),
            "the inverse roots of parameter 0, block 0 failed 4 amortized computations in a row, "
            "more than the 3 tolerated; the last time coupled Newton did not reach its tolerance.");
  EXPECT_EQ(params, before);
}

}  // namespace
