// Shampoo composed at compile time (basic_shampoo.hpp, preconditioners/): Shampoo<T, Parts...>
// takes its family, plan and executor in any order; a family named by the type steps exactly as the
// same family chosen at run time by Options (AnyPreconditioner), bit for bit, with a run-time or a
// static plan; the options may not contradict the family the type names; and KL-SOAP's factors take
// the KL estimate from SOAP's eigenbasis.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <tessel/shampoo/optimizer.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;

// ---- the parts, in any order ----

static_assert(std::is_same_v<Shampoo<float>,
                             BasicShampoo<float, AnyPreconditioner, RuntimePlan, exec::Auto>>);
static_assert(std::is_same_v<Shampoo<double, exec::Serial, Soap>,
                             BasicShampoo<double, EigenvalueCorrected, RuntimePlan, exec::Serial>>);
static_assert(std::is_same_v<Shampoo<float, RuntimePlan, exec::Serial>,
                             BasicShampoo<float, AnyPreconditioner, RuntimePlan, exec::Serial>>);
static_assert(Preconditioner<RootInv> && Preconditioner<Eigendecomposed> &&
              Preconditioner<KlShampoo<RootInv>> && Preconditioner<KlShampoo<Eigendecomposed>> &&
              Preconditioner<EigenvalueCorrected> && Preconditioner<KlSoap> &&
              Preconditioner<SpectralDescent> && Preconditioner<SignDescent> &&
              Preconditioner<AnyPreconditioner, double, exec::Serial>);
// Only the families that accumulate Kronecker factors have them for the pre-check to bound.
template <class S>
concept HasFactors = requires(S s) {
  s.factors;
};
static_assert(HasFactors<RootInv::State<float, exec::Auto>> &&
              HasFactors<KlSoap::State<float, exec::Auto>> &&
              !HasFactors<SignDescent::State<float, exec::Auto>>);

// (32, 17) at 24: rows [0, 24) [24, 32); (4, 33): columns [0, 24) [24, 33); (6,) whole.
constexpr auto plan =
    make_plan(plan_options(Int<24>{}, Int<1>{}, 1), make_shape(Int<32>{}, Int<17>{}),
              make_shape(Int<4>{}, Int<33>{}), make_shape(Int<6>{}));
using SP = static_plan<plan>;
// Spectral descent orthogonalizes 2-D blocks only.
constexpr auto plan_2d =
    make_plan(plan_options(Int<24>{}, Int<1>{}, 1), make_shape(Int<32>{}, Int<17>{}),
              make_shape(Int<4>{}, Int<33>{}));

using Params = std::vector<std::vector<double>>;

template <class Opt>
Params run(Opt& opt, std::vector<index_t> const& sizes, int steps) {
  Params params;
  for (std::size_t p = 0; p < sizes.size(); ++p) {
    params.emplace_back(static_cast<std::size_t>(sizes[p]));
    for (std::size_t i = 0; i < params[p].size(); ++i)
      params[p][i] = std::sin(1.0 + static_cast<double>(i + 7 * p));
  }
  for (int t = 0; t < steps; ++t) {
    Params grads;
    for (std::size_t p = 0; p < sizes.size(); ++p) {
      grads.emplace_back(params[p].size());
      for (std::size_t i = 0; i < grads[p].size(); ++i)
        grads[p][i] = std::cos(static_cast<double>(3 * i + 5 * p + t)) * (1.0 + 0.1 * t);
    }
    std::vector<std::span<double>> ps(params.begin(), params.end());
    std::vector<std::span<double const>> gs(grads.begin(), grads.end());
    opt.step(ps, gs);
  }
  return params;
}

Options options_of(PreconditionerType type, bool kl) {
  Options o;
  o.preconditioner = type;
  o.kl_shampoo = kl;
  o.beta2 = 0.95;
  o.epsilon = 1e-6;
  o.precondition_frequency = 2;
  o.grafting = adam_grafting();
  return o;
}

// Shampoo<double, F> with run-time and static plans against Shampoo<double> choosing F from the
// options: the same parameters and state, bit for bit. Plain updates (the static plan's own
// pass), then momentum and decoupled decay (the shared passes).
template <class F, auto Plan>
void expect_family_steps_as_chosen_at_run_time(PreconditionerType type, bool kl) {
  std::vector<index_t> sizes;
  for (std::size_t p = 0; p < Plan.num_params(); ++p) {
    index_t n = 1;
    for (index_t e : Plan.params[p].shape) n *= e;
    sizes.push_back(n);
  }
  for (double momentum : {0.0, 0.9}) {
    Options o = options_of(type, kl);
    o.momentum = momentum;
    o.weight_decay = momentum == 0.0 ? 0.0 : 0.01;
    Shampoo<double> chosen(Plan, o);
    Shampoo<double, F> named(Plan, o);
    Shampoo<double, F, static_plan<Plan>> fixed(o);
    Params const want = run(chosen, sizes, 5);
    EXPECT_EQ(run(named, sizes, 5), want) << preconditioner_name(type) << " momentum " << momentum;
    EXPECT_EQ(run(fixed, sizes, 5), want) << preconditioner_name(type) << " momentum " << momentum;
    EXPECT_EQ(named.state_dict(), chosen.state_dict());
    EXPECT_EQ(fixed.state_dict(), chosen.state_dict());
  }
}

TEST(Families, EachStepsAsWhenChosenAtRunTime) {
  expect_family_steps_as_chosen_at_run_time<RootInv, plan>(PreconditionerType::shampoo, false);
  expect_family_steps_as_chosen_at_run_time<Eigendecomposed, plan>(
      PreconditionerType::eigendecomposed, false);
  expect_family_steps_as_chosen_at_run_time<KlShampoo<RootInv>, plan>(PreconditionerType::shampoo,
                                                                      true);
  expect_family_steps_as_chosen_at_run_time<KlShampoo<Eigendecomposed>, plan>(
      PreconditionerType::eigendecomposed, true);
  expect_family_steps_as_chosen_at_run_time<Soap, plan>(PreconditionerType::eigenvalue_corrected,
                                                        false);
  expect_family_steps_as_chosen_at_run_time<KlSoap, plan>(PreconditionerType::eigenvalue_corrected,
                                                          true);
  expect_family_steps_as_chosen_at_run_time<SpectralDescent, plan_2d>(
      PreconditionerType::spectral_descent, false);
  expect_family_steps_as_chosen_at_run_time<SignDescent, plan>(PreconditionerType::sign_descent,
                                                               false);
}

TEST(Families, TheRunTimeChoiceFollowsTheOptions) {
  auto index_of = [](PreconditionerType type, bool kl) {
    Options o;
    o.preconditioner = type;
    o.kl_shampoo = kl;
    return AnyPreconditioner(o).index();
  };
  EXPECT_EQ(index_of(PreconditionerType::shampoo, false), 0u);
  EXPECT_EQ(index_of(PreconditionerType::shampoo, true), 1u);
  EXPECT_EQ(index_of(PreconditionerType::eigendecomposed, true), 3u);
  EXPECT_EQ(index_of(PreconditionerType::eigenvalue_corrected, false), 4u);
  EXPECT_EQ(index_of(PreconditionerType::eigenvalue_corrected, true), 5u);
  // Sign descent has no KL variant: kl_shampoo is ignored (ignored_options warns of it).
  EXPECT_EQ(index_of(PreconditionerType::sign_descent, true), 7u);
}

using test::error_of;

TEST(Families, OptionsMayNotContradictTheNamedFamily) {
  Options o;
  o.preconditioner = PreconditionerType::eigendecomposed;
  EXPECT_EQ(error_of([&] { Shampoo<float, Soap> opt(plan, o); }),
            "the options name the preconditioner eigendecomposed Shampoo but this optimizer's "
            "family is eigenvalue-corrected Shampoo; leave Options::preconditioner at its default "
            "or name the family's.");
  o = Options{};
  o.kl_shampoo = true;
  EXPECT_EQ(error_of([&] { Shampoo<float, RootInv> opt(plan, o); }),
            "the options set kl_shampoo but this optimizer's family (shampoo) has no KL factor "
            "estimate; name KlShampoo<...> or KlSoap.");
  // Inspection asks for a mode a block has, or is told how many it has.
  Shampoo<float, SignDescent> sign(plan, Options{});
  EXPECT_EQ(error_of([&] { (void)sign.factor_matrix(0, 0); }),
            "block 0 has 0 preconditioned modes (factor matrices); there is no factor matrix 0.");
  Shampoo<float, RootInv> root(plan, Options{});
  EXPECT_EQ(error_of([&] { (void)root.inverse_root(1, 2); }),
            "block 1 has 2 preconditioned modes (factor matrices); there is no factor matrix 2.");
  // The default preconditioner takes the family's name; so does the optimizer's options().
  Shampoo<float, Soap> soap(plan, Options{});
  EXPECT_EQ(soap.options().preconditioner, PreconditionerType::eigenvalue_corrected);
  Shampoo<float, KlSoap> kl_soap(plan, Options{});
  EXPECT_TRUE(kl_soap.options().kl_shampoo);
}

// KL-SOAP on one (5, 7) block: after a refresh at step 1, the eigenvalue estimates are
// diag(Q^T (F / bc2) Q), and at step 2 the left factor gains (1 - beta2) X X^T with
// X = G P_R, P_R = Q_R diag((7 max(lambda_R, eps))^(-1/2)) Q_R^T, computed here in plain loops.
TEST(KlSoap, TheLeftFactorTakesTheGradientPreconditionedByTheRightEstimate) {
  index_t const m = 5, n = 7;
  auto const p =
      make_plan(plan_options(index_t{64}, infinite), std::vector<std::vector<index_t>>{{m, n}});
  Options o;
  o.beta2 = 0.9;
  o.epsilon = 1e-3;
  o.factor_matrix_dtype = DType::f64;
  Shampoo<double, KlSoap> opt(p, o);
  std::vector<double> w(static_cast<std::size_t>(m * n), 0.5), g1(w.size()), g2(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) {
    g1[i] = std::sin(0.3 + 1.7 * static_cast<double>(i));
    g2[i] = std::cos(0.2 + 0.9 * static_cast<double>(i));
  }
  opt.step({w.data()}, {g1.data()});
  StateDict const s1 = opt.state_dict();
  auto values = [](StateDict const& s, std::vector<std::string> tail) {
    StateKey key{"0", "block_0"};
    key.insert(key.end(), tail.begin(), tail.end());
    auto const& t = s.at(key);
    std::vector<double> out(t.data.size() / sizeof(double));
    std::memcpy(out.data(), t.data.data(), t.data.size());
    return out;
  };
  auto const f_r = values(s1, {"shampoo", "factor_matrices", "1"});
  auto const q_r = values(s1, {"shampoo", "factor_matrices_eigenvectors", "1"});
  auto const lambda_r = values(s1, {"shampoo", "factor_matrices_eigenvalues", "1"});
  auto const f_l = values(s1, {"shampoo", "factor_matrices", "0"});
  double const bc2 = 1.0 - 0.9;
  // To rounding of the largest: the block has rank 5, so two of the seven are zeros.
  double largest = 0;
  for (double l : lambda_r) largest = std::max(largest, std::abs(l));
  for (index_t i = 0; i < n; ++i) {
    double want = 0;
    for (index_t a = 0; a < n; ++a)
      for (index_t b = 0; b < n; ++b)
        want += q_r[static_cast<std::size_t>(a * n + i)] *
                f_r[static_cast<std::size_t>(a * n + b)] * q_r[static_cast<std::size_t>(b * n + i)];
    EXPECT_NEAR(lambda_r[static_cast<std::size_t>(i)], want / bc2, 1e-12 * largest) << i;
  }
  // P_R and X = G2 P_R.
  std::vector<double> p_r(static_cast<std::size_t>(n * n), 0.0);
  for (index_t a = 0; a < n; ++a)
    for (index_t b = 0; b < n; ++b)
      for (index_t k = 0; k < n; ++k)
        p_r[static_cast<std::size_t>(a * n + b)] +=
            q_r[static_cast<std::size_t>(a * n + k)] *
            std::pow(7.0 * std::max(lambda_r[static_cast<std::size_t>(k)], 1e-3), -0.5) *
            q_r[static_cast<std::size_t>(b * n + k)];
  std::vector<double> x(w.size(), 0.0);
  for (index_t r = 0; r < m; ++r)
    for (index_t c = 0; c < n; ++c)
      for (index_t k = 0; k < n; ++k)
        x[static_cast<std::size_t>(r * n + c)] +=
            g2[static_cast<std::size_t>(r * n + k)] * p_r[static_cast<std::size_t>(k * n + c)];
  opt.step({w.data()}, {g2.data()});
  auto const f_l2 = values(opt.state_dict(), {"shampoo", "factor_matrices", "0"});
  for (index_t a = 0; a < m; ++a)
    for (index_t b = 0; b < m; ++b) {
      double xx = 0;
      for (index_t c = 0; c < n; ++c)
        xx += x[static_cast<std::size_t>(a * n + c)] * x[static_cast<std::size_t>(b * n + c)];
      double const want = 0.9 * f_l[static_cast<std::size_t>(a * m + b)] + 0.1 * xx;
      EXPECT_NEAR(f_l2[static_cast<std::size_t>(a * m + b)], want, 1e-11 * (1.0 + std::abs(want)))
          << a << "," << b;
    }
}

}  // namespace
