// Spectral descent (Muon), sign descent and eigenvalue-corrected Shampoo (SOAP) as the
// preconditioner of the Shampoo step: the update
// against a float64 reference written here from the definitions (the Newton-Schulz polynomial
// applied in its textbook form a X + b (X X^T) X + c (X X^T)^2 X, not the Gram form the library
// uses), convergence to an orthogonal factor with convergent coefficients, grafting, the state
// they keep (no factors), and their errors and warnings. SOAP against a float64 reference with
// Eigen's eigensolver: factors, their eigenvectors, the rotated second moment, the step.
// Eigendecomposed Shampoo's state (its step is in optimizer_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <tessel/shampoo/optimizer.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using tessel::test::error_of;

using Matrix = std::vector<double>;  // row-major

Matrix multiply(Matrix const& a, Matrix const& b, index_t n, index_t k, index_t m) {
  Matrix c(static_cast<std::size_t>(n * m), 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t l = 0; l < k; ++l)
      for (index_t j = 0; j < m; ++j)
        c[static_cast<std::size_t>(i * m + j)] +=
            a[static_cast<std::size_t>(i * k + l)] * b[static_cast<std::size_t>(l * m + j)];
  return c;
}

Matrix transpose(Matrix const& a, index_t rows, index_t cols) {
  Matrix t(a.size());
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j)
      t[static_cast<std::size_t>(j * rows + i)] = a[static_cast<std::size_t>(i * cols + j)];
  return t;
}

// X <- a X + b (X X^T) X + c (X X^T)^2 X from X = G / max(||G||_F, 1e-8).
Matrix newton_schulz(Matrix g, index_t rows, index_t cols, NewtonSchulzConfig const& ns) {
  double norm = 0.0;
  for (double v : g) norm += v * v;
  norm = std::max(std::sqrt(norm), 1e-8);
  for (double& v : g) v /= norm;
  for (index_t it = 0; it < ns.num_iterations; ++it) {
    Matrix const xxt = multiply(g, transpose(g, rows, cols), rows, cols, rows);
    Matrix const bx = multiply(xxt, g, rows, rows, cols);
    Matrix const cx = multiply(xxt, bx, rows, rows, cols);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = ns.a * g[i] + ns.b * bx[i] + ns.c * cx[i];
  }
  return g;
}

std::vector<double> random_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// target_parameter_dimensionality 2: 2-D parameters stay 2-D (1 would merge them to 1-D).
Plan plan_for(std::vector<std::vector<index_t>> shapes, index_t max_dim = 1024,
              index_t target = 2) {
  return make_plan(PlanOptions<index_t, index_t>{max_dim, target, 1}, shapes);
}

TEST(SpectralDescent, OneStepIsTheOrthogonalizedGradientForTallAndWideBlocks) {
  for (auto [rows, cols] : {std::pair<index_t, index_t>{7, 4}, {3, 6}, {5, 5}}) {
    Options o;
    o.preconditioner = PreconditionerType::spectral_descent;
    o.beta1 = 0.0;
    o.lr = 0.1;
    Shampoo<double> opt(plan_for({{rows, cols}}), o);
    auto const n = static_cast<std::size_t>(rows * cols);
    std::vector<double> w = random_values(n, 1), g = random_values(n, 2);
    std::vector<double> const w0 = w;
    opt.step({std::span<double>(w)}, {std::span<double const>(g)});
    Matrix const want = newton_schulz(g, rows, cols, o.newton_schulz);
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_NEAR(w[i], w0[i] - 0.1 * want[i], 1e-12) << rows << "x" << cols << " element " << i;
  }
}

TEST(SpectralDescent, ConvergentCoefficientsGiveAnOrthogonalFactorAndScaleByDimsApplies) {
  // (3, -16/5, 6/5) sums to 1: with enough iterations X^T X = I for a full-rank tall block.
  index_t const rows = 9, cols = 4;
  Options o;
  o.preconditioner = PreconditionerType::spectral_descent;
  o.beta1 = 0.0;
  o.lr = 1.0;
  o.newton_schulz = {
      40, 3.0, -16.0 / 5.0, 6.0 / 5.0, [](index_t d_in, index_t d_out) {
        return std::sqrt(std::max(1.0, static_cast<double>(d_out) / static_cast<double>(d_in)));
      }};
  Shampoo<double> opt(plan_for({{rows, cols}}), o);
  std::vector<double> w(static_cast<std::size_t>(rows * cols), 0.0);
  std::vector<double> const g = random_values(w.size(), 3);
  opt.step({std::span<double>(w)}, {std::span<double const>(g)});
  double const scale = std::sqrt(9.0 / 4.0);
  for (double& v : w) v = -v / scale;  // the direction itself
  Matrix const gram = multiply(transpose(w, rows, cols), w, cols, rows, cols);
  for (index_t i = 0; i < cols; ++i)
    for (index_t j = 0; j < cols; ++j)
      EXPECT_NEAR(gram[static_cast<std::size_t>(i * cols + j)], i == j ? 1.0 : 0.0, 1e-9);
}

TEST(SpectralDescent, FilteredGradientGraftingAndFloatFollowTheShampooStep) {
  // beta1 0.9 (the filtered, bias-corrected gradient is orthogonalized), Adam grafting (each
  // block's direction rescaled to the grafting direction's norm), two blocks of one parameter,
  // float parameters: against the reference in double, to float rounding.
  index_t const rows = 8, cols = 6;  // max_preconditioner_dim 4: blocks (4, 4), (4, 2) x 2 rows
  Options o;
  o.preconditioner = PreconditionerType::spectral_descent;
  o.grafting = adam_grafting();
  o.lr = 0.01;
  Shampoo<float> opt(plan_for({{rows, cols}}, 4), o);
  auto const n = static_cast<std::size_t>(rows * cols);
  std::vector<double> wd = random_values(n, 4);
  std::vector<float> w(wd.begin(), wd.end());
  std::vector<double> filtered(n, 0.0), second(n, 0.0);
  for (int t = 1; t <= 3; ++t) {
    std::vector<double> const gd = random_values(n, 10 + static_cast<unsigned>(t));
    std::vector<float> const g(gd.begin(), gd.end());
    opt.step({std::span<float>(w)}, {std::span<float const>(g)});
    for (std::size_t i = 0; i < n; ++i) {
      double const gi = static_cast<double>(g[i]);
      filtered[i] = 0.9 * filtered[i] + 0.1 * gi;
      second[i] = 0.999 * second[i] + 0.001 * gi * gi;
    }
    double const bias1 = 1.0 - std::pow(0.9, t), bias2 = 1.0 - std::pow(0.999, t);
    // The four blocks: rows [0, 4) and [4, 8), columns [0, 4) and [4, 6).
    for (index_t r0 : {0, 4})
      for (auto [c0, bc] : {std::pair<index_t, index_t>{0, 4}, {4, 2}}) {
        Matrix block, adam;
        for (index_t i = 0; i < 4; ++i)
          for (index_t j = 0; j < bc; ++j) {
            auto const at = static_cast<std::size_t>((r0 + i) * cols + c0 + j);
            block.push_back(filtered[at] / bias1);
            adam.push_back(filtered[at] / bias1 / (std::sqrt(second[at] / bias2) + 1e-10));
          }
        Matrix const d = newton_schulz(block, 4, bc, o.newton_schulz);
        double dn = 0.0, an = 0.0;
        for (std::size_t i = 0; i < d.size(); ++i) {
          dn += d[i] * d[i];
          an += adam[i] * adam[i];
        }
        double const graft = std::sqrt(an) / (std::sqrt(dn) + 1e-16);
        for (index_t i = 0; i < 4; ++i)
          for (index_t j = 0; j < bc; ++j) {
            auto const at = static_cast<std::size_t>((r0 + i) * cols + c0 + j);
            wd[at] -= 0.01 * graft * d[static_cast<std::size_t>(i * bc + j)];
          }
      }
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_NEAR(w[i], wd[i], 2e-5 * std::max(1.0, std::abs(wd[i]))) << "step " << t << " " << i;
  }
  // State: the filtered gradient and the grafting accumulator, no factors or roots.
  auto const state = opt.state_dict();
  for (auto const& [key, tensor] : state)
    for (auto const& part : key) EXPECT_NE(part, "factor_matrices");
  EXPECT_TRUE(state.count({"0", "block_0", "filtered_grad"}));
  EXPECT_TRUE(state.count({"0", "block_0", "adagrad"}));
  Shampoo<float> copy(plan_for({{rows, cols}}, 4), o);
  copy.load_state_dict(state);
  EXPECT_TRUE(copy.state_dict() == state);
}

// U V^T of the reduced SVD G = U S V^T over the singular values above 1e-10 S_max (a block of
// rank r gives U_r V_r^T), times sum(S) when scale_by_nuclear_norm: Distributed Shampoo's
// svd_orthogonalization, from Eigen's JacobiSVD, independent of tessel's eigh route.
Matrix svd_orthogonalization(Matrix const& g, index_t rows, index_t cols,
                             bool scale_by_nuclear_norm) {
  using Dense = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Dense const a = Eigen::Map<Dense const>(g.data(), rows, cols);
  Eigen::JacobiSVD<Dense> svd(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
  Eigen::VectorXd const s = svd.singularValues();
  Eigen::Index rank = 0;
  while (rank < s.size() && s(rank) > 1e-10 * s(0)) ++rank;
  Dense uv = svd.matrixU().leftCols(rank) * svd.matrixV().leftCols(rank).transpose();
  if (scale_by_nuclear_norm) uv *= s.head(rank).sum();
  return Matrix(uv.data(), uv.data() + uv.size());
}

// An (rows, cols) matrix of rank `rank` (rows x rank times rank x cols random factors).
Matrix low_rank(index_t rows, index_t cols, index_t rank, unsigned seed) {
  Matrix const a = random_values(static_cast<std::size_t>(rows * rank), seed);
  Matrix const b = random_values(static_cast<std::size_t>(rank * cols), seed + 1);
  return multiply(a, b, rows, rank, cols);
}

Options svd_options(bool scale_by_nuclear_norm) {
  Options o;
  o.preconditioner = PreconditionerType::spectral_descent;
  o.orthogonalization = OrthogonalizationMethod::svd;
  o.svd.scale_by_nuclear_norm = scale_by_nuclear_norm;
  o.beta1 = 0.0;
  o.lr = 0.1;
  return o;
}

TEST(SvdOrthogonalization, OneStepIsUVTransposeOfTallWideSquareAndRankDeficientBlocks) {
  struct Case {
    index_t rows, cols;
    Matrix g;
  };
  std::vector<Case> const cases{{7, 4, random_values(28, 21)}, {3, 6, random_values(18, 22)},
                                {5, 5, random_values(25, 23)}, {6, 4, low_rank(6, 4, 2, 24)},
                                {3, 5, low_rank(3, 5, 1, 26)}, {4, 4, low_rank(4, 4, 3, 28)},
                                {4, 3, Matrix(12, 0.0)}};
  for (bool nuclear : {false, true})
    for (auto const& [rows, cols, g] : cases) {
      Options const o = svd_options(nuclear);
      Shampoo<double> opt(plan_for({{rows, cols}}), o);
      std::vector<double> w = random_values(g.size(), 1);
      std::vector<double> const w0 = w;
      opt.step({std::span<double>(w)}, {std::span<double const>(g)});
      Matrix const want = svd_orthogonalization(g, rows, cols, nuclear);
      double scale = 1.0;
      for (double v : want) scale = std::max(scale, std::abs(v));
      for (std::size_t i = 0; i < g.size(); ++i)
        EXPECT_NEAR((w0[i] - w[i]) / 0.1, want[i], 1e-11 * scale)
            << rows << "x" << cols << " nuclear " << nuclear << " element " << i;
    }
}

TEST(SvdOrthogonalization, MomentumFilteringAndScaleByDimsFollowTheStep) {
  // beta1 0.9 (the bias-corrected filtered gradient is orthogonalized), momentum 0.5 with
  // dampening 0.25, scale_by_dims sqrt(max(1, d_out / d_in)) after the nuclear norm: three steps
  // against the reference.
  index_t const rows = 6, cols = 3;
  Options o = svd_options(true);
  o.beta1 = 0.9;
  o.momentum = 0.5;
  o.dampening = 0.25;
  o.svd.scale_by_dims = [](index_t d_in, index_t d_out) {
    return std::sqrt(std::max(1.0, static_cast<double>(d_out) / static_cast<double>(d_in)));
  };
  Shampoo<double> opt(plan_for({{rows, cols}}), o);
  auto const n = static_cast<std::size_t>(rows * cols);
  std::vector<double> w = random_values(n, 30), want = w;
  Matrix filtered(n, 0.0), momentum(n, 0.0);
  for (int t = 1; t <= 3; ++t) {
    std::vector<double> const g = random_values(n, 30 + static_cast<unsigned>(t));
    opt.step({std::span<double>(w)}, {std::span<double const>(g)});
    Matrix block(n);
    for (std::size_t i = 0; i < n; ++i) {
      filtered[i] = 0.9 * filtered[i] + 0.1 * g[i];
      block[i] = filtered[i] / (1.0 - std::pow(0.9, t));
    }
    Matrix const d = svd_orthogonalization(block, rows, cols, true);
    for (std::size_t i = 0; i < n; ++i) {
      momentum[i] = 0.5 * momentum[i] + 0.75 * std::sqrt(2.0) * d[i];
      want[i] -= 0.1 * momentum[i];
    }
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_NEAR(w[i], want[i], 1e-11 * std::max(1.0, std::abs(want[i])))
          << "step " << t << " element " << i;
  }
}

TEST(SvdOrthogonalization, AddsNoStateAndResumesBitForBit) {
  index_t const rows = 5, cols = 3;
  Options o = svd_options(true);
  o.beta1 = 0.9;
  o.momentum = 0.5;
  Options ns = o;
  ns.orthogonalization = OrthogonalizationMethod::newton_schulz;
  ns.svd = {};
  auto const n = static_cast<std::size_t>(rows * cols);
  std::vector<double> w = random_values(n, 40), g = random_values(n, 41);
  Shampoo<double> opt(plan_for({{rows, cols}}), o), newton(plan_for({{rows, cols}}), ns);
  std::vector<double> w_ns = w;
  opt.step({std::span<double>(w)}, {std::span<double const>(g)});
  newton.step({std::span<double>(w_ns)}, {std::span<double const>(g)});
  auto const state = opt.state_dict();
  // The same keys as Newton-Schulz's: the filtered gradient and the momentum, nothing of its own.
  std::vector<StateKey> keys, ns_keys;
  for (auto const& [key, tensor] : state) keys.push_back(key);
  for (auto const& [key, tensor] : newton.state_dict()) ns_keys.push_back(key);
  EXPECT_EQ(keys, ns_keys);
  Shampoo<double> resumed(plan_for({{rows, cols}}), o);
  resumed.load_state_dict(state);
  std::vector<double> w_resumed = w;
  std::vector<double> const g2 = random_values(n, 42);
  opt.step({std::span<double>(w)}, {std::span<double const>(g2)});
  resumed.step({std::span<double>(w_resumed)}, {std::span<double const>(g2)});
  EXPECT_EQ(w_resumed, w);
  EXPECT_TRUE(resumed.state_dict() == opt.state_dict());
}

TEST(SvdOrthogonalization, SettingsAreValidatedAndWarnedWhereUnused) {
  Options svd_with_ns = svd_options(false);
  svd_with_ns.newton_schulz.num_iterations = 3;
  EXPECT_EQ(ignored_options(svd_with_ns),
            std::vector<std::string>{"the newton_schulz settings have no effect with SVD "
                                     "orthogonalization (Newton-Schulz orthogonalization uses "
                                     "them)."});
  Options ns_with_svd;
  ns_with_svd.preconditioner = PreconditionerType::spectral_descent;
  ns_with_svd.svd.scale_by_nuclear_norm = true;
  EXPECT_EQ(ignored_options(ns_with_svd),
            std::vector<std::string>{"the svd settings have no effect with Newton-Schulz "
                                     "orthogonalization (SVD orthogonalization uses them)."});
  Options sign = svd_options(true);
  sign.preconditioner = PreconditionerType::sign_descent;
  EXPECT_EQ(
      ignored_options(sign),
      (std::vector<std::string>{
          "orthogonalization SVD has no effect with sign descent (spectral descent uses "
          "it).",
          "the svd settings have no effect with sign descent (spectral descent uses them)."}));
  EXPECT_EQ(ignored_options(svd_options(true)), std::vector<std::string>{});
  Options v = svd_options(false);
  v.orthogonalization = static_cast<OrthogonalizationMethod>(5);
  EXPECT_EQ(error_of([&] { validate(v); }),
            "orthogonalization 5 is not an OrthogonalizationMethod.");
}

TEST(SvdOrthogonalization, AGramMatrixThatOverflowsIsRefusedNamingTheBlock) {
  // Finite gradients whose squares overflow double (the Gram matrix's type for float and double
  // blocks): eigh refuses the Gram matrix, the step throws naming the block, and the parameters
  // keep their values.
  Shampoo<double> overflowing(plan_for({{4, 3}}), svd_options(false));
  std::vector<double> w(12, 1.0), g(12, 1e200);
  g[3] = -2e200;
  EXPECT_EQ(
      error_of([&] { overflowing.step({std::span<double>(w)}, {std::span<double const>(g)}); }),
      "the SVD orthogonalization of parameter 0, block 0 failed: eigh did not converge on its "
      "Gram matrix (a gradient whose squares overflow f64 does this).");
  EXPECT_EQ(w, std::vector<double>(12, 1.0));
}

TEST(SvdOrthogonalization, FloatBlocksKeepTheSingularValuesAFloatSvdResolves) {
  // Singular values 1, 0.1 and 1e-4: in a float Gram matrix the last is below rounding
  // (sqrt(n eps) ~ 1e-3) and its direction would be dropped; a float block is orthogonalized in
  // double, so U V^T matches the reference of the float-rounded gradient to float's rounding.
  // Gradients of 1e30 (squares beyond float) are orthogonalized too.
  for (auto [rows, cols] : {std::pair<index_t, index_t>{7, 3}, {3, 7}}) {
    index_t const k = std::min(rows, cols);
    using Dense = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    Dense const u = Eigen::HouseholderQR<Dense>(
                        Eigen::Map<Dense const>(
                            random_values(static_cast<std::size_t>(rows * k), 41).data(), rows, k))
                        .householderQ() *
                    Dense::Identity(rows, k);
    Dense const v = Eigen::HouseholderQR<Dense>(
                        Eigen::Map<Dense const>(
                            random_values(static_cast<std::size_t>(cols * k), 42).data(), cols, k))
                        .householderQ() *
                    Dense::Identity(cols, k);
    Eigen::VectorXd s(k);
    s << 1.0, 0.1, 1e-4;
    for (double magnitude : {1.0, 1e30}) {
      Dense const a = u * (magnitude * s).asDiagonal() * v.transpose();
      std::vector<float> const g(a.data(), a.data() + a.size());
      Matrix const rounded(g.begin(), g.end());
      Matrix const want = svd_orthogonalization(rounded, rows, cols, false);
      Shampoo<float> opt(plan_for({{rows, cols}}), svd_options(false));
      std::vector<float> w(g.size(), 0.0f);
      opt.step({std::span<float>(w)}, {std::span<float const>(g)});
      for (std::size_t i = 0; i < g.size(); ++i)
        EXPECT_NEAR(-w[i] / 0.1, want[i], 1e-5)
            << rows << "x" << cols << " magnitude " << magnitude << " element " << i;
    }
  }
}

TEST(SignDescent, TheDirectionIsTheSignOfTheFilteredGradient) {
  Options o;
  o.preconditioner = PreconditionerType::sign_descent;
  o.lr = 0.5;
  o.use_bias_correction = false;
  Shampoo<double> opt(plan_for({{3, 2}, {4}}), o);
  std::vector<double> a{1, 2, 3, 4, 5, 6}, b{0, 0, 0, 0};
  std::vector<double> ga{0.5, -0.5, 0.0, 2.0, -3.0, 1e-30}, gb{-1, 1, -1, 1};
  opt.step({std::span<double>(a), std::span<double>(b)},
           {std::span<double const>(ga), std::span<double const>(gb)});
  // Filtered gradient without bias correction: 0.1 g, whose sign is g's.
  EXPECT_EQ(a, (std::vector<double>{0.5, 2.5, 3.0, 3.5, 5.5, 5.5}));
  EXPECT_EQ(b, (std::vector<double>{0.5, -0.5, 0.5, -0.5}));
}

TEST(SpectralDescent, BlocksThatAreNot2DAreRefusedAndFactorOptionsAreWarned) {
  Options o;
  o.preconditioner = PreconditionerType::spectral_descent;
  EXPECT_EQ(error_of([&] {
              Shampoo<float> opt(plan_for({{4, 3}, {5}}), o);
            }),
            "spectral descent orthogonalizes 2-D blocks, but parameter 1, block 0 has shape (5); "
            "with target_parameter_dimensionality 2 every parameter of rank 2 or more merges to "
            "2-D blocks, and 0-D and 1-D parameters cannot be orthogonalized.");
  // A 3-D parameter merged to 2-D by the plan is accepted.
  EXPECT_EQ(error_of([&] { Shampoo<float> opt(plan_for({{2, 3, 4}}, 1024, 2), o); }), "no error");
  o.beta2 = 0.99;
  o.precondition_frequency = 10;
  o.factor_matrix_dtype = DType::bf16;
  EXPECT_EQ(ignored_options(o),
            std::vector<std::string>{"beta2 0.99, precondition_frequency 10, factor_matrix_dtype "
                                     "bf16 have no effect with spectral descent, which keeps no "
                                     "factors."});
  Options s;
  s.preconditioner = PreconditionerType::sign_descent;
  s.newton_schulz.num_iterations = 3;
  s.epsilon = 1e-8;
  EXPECT_EQ(ignored_options(s),
            (std::vector<std::string>{
                "the newton_schulz settings have no effect with sign descent (spectral descent "
                "uses them).",
                "epsilon 1e-08 has no effect with sign descent, which keeps no factors."}));
  Options packed;
  packed.preconditioner = PreconditionerType::spectral_descent;
  packed.use_symmetric_packing = true;
  EXPECT_EQ(ignored_options(packed),
            std::vector<std::string>{"use_symmetric_packing has no effect with spectral descent, "
                                     "which keeps no factors."});
  Options v;
  v.newton_schulz.num_iterations = -1;
  EXPECT_EQ(error_of([&] { validate(v); }), "newton_schulz num_iterations must be >= 0, got -1.");
  v.newton_schulz.num_iterations = 5;
  v.newton_schulz.b = std::nan("");
  EXPECT_EQ(error_of([&] { validate(v); }),
            "newton_schulz coefficients must be finite, got (3.4445, nan, 2.0315).");
  v = Options{};
  v.preconditioner = static_cast<PreconditionerType>(7);
  EXPECT_EQ(error_of([&] { validate(v); }), "preconditioner 7 is not a PreconditionerType.");
  v = Options{};
  v.preconditioner = PreconditionerType::sign_descent;
  v.start_preconditioning_step = 0;
  EXPECT_EQ(error_of([&] { validate(v); }),
            "start_preconditioning_step must be >= 1 or -1, got 0.");
  v.start_preconditioning_step = 3;
  v.precondition_frequency = 1;
  EXPECT_EQ(error_of([&] { validate(v); }), "no error");
  Options r;
  r.precondition_frequency = 10;
  r.preconditioner = PreconditionerType::spectral_descent;
  EXPECT_EQ(resolved_start_step(r), 1);
}

// Four steps of eigenvalue-corrected Shampoo on a (rows, cols) block with `ignored` dimensions
// (ignored_basis_change_dims[2]) against a float64 reference: the factors' eigenvectors from
// Eigen's eigensolver (the identity for an ignored dimension), the rotated gradient's second
// moment raised to `exponent` (inverse_exponent_override[2]; 1/2 by default), and the update
// rotated back. The state has one factor per kept dimension, numbered in order as Distributed
// Shampoo numbers them, and resumes from step 2 bit for bit.
void expect_eigenvalue_corrected_steps(index_t rows, index_t cols,
                                       std::vector<index_t> const& ignored, double exponent = 0.5) {
  using M = Eigen::MatrixXd;
  bool const rotate_rows = std::find(ignored.begin(), ignored.end(), 0) == ignored.end();
  bool const rotate_cols = std::find(ignored.begin(), ignored.end(), 1) == ignored.end();
  SCOPED_TRACE(::testing::Message()
               << rows << "x" << cols << ", rows rotated " << rotate_rows << ", columns rotated "
               << rotate_cols << ", exponent " << exponent);
  Options o;
  o.preconditioner = PreconditionerType::eigenvalue_corrected;
  if (!ignored.empty()) o.ignored_basis_change_dims[2] = ignored;
  if (exponent != 0.5) {
    o.inverse_exponent_override[2] = exponent;
    o.inverse_exponent_override[1] = 0.9;  // another order's: no effect on this block
  }
  o.beta1 = 0.0;
  o.beta2 = 0.9;
  o.epsilon = 1e-6;
  o.lr = 0.01;
  o.use_bias_correction = false;
  o.factor_matrix_dtype = DType::f64;
  EXPECT_EQ(ignored_options(o), std::vector<std::string>{});
  Shampoo<double> opt(plan_for({{rows, cols}}), o);
  auto const n = static_cast<std::size_t>(rows * cols);
  std::vector<double> w = random_values(n, 21);
  M wr = Eigen::Map<Eigen::Matrix<double, -1, -1, Eigen::RowMajor>>(w.data(), rows, cols);
  M l = M::Zero(rows, rows), r = M::Zero(cols, cols), v = M::Zero(rows, cols);
  StateDict mid;
  std::vector<double> w_mid;
  for (unsigned t = 1; t <= 4; ++t) {
    std::vector<double> const g = random_values(n, 30 + t);
    opt.step({std::span<double>(w)}, {std::span<double const>(g)});
    M const gm =
        Eigen::Map<Eigen::Matrix<double, -1, -1, Eigen::RowMajor> const>(g.data(), rows, cols);
    l = 0.9 * l + 0.1 * gm * gm.transpose();
    r = 0.9 * r + 0.1 * gm.transpose() * gm;
    M const ql = rotate_rows ? M(Eigen::SelfAdjointEigenSolver<M>(l).eigenvectors())
                             : M(M::Identity(rows, rows));
    M const qr = rotate_cols ? M(Eigen::SelfAdjointEigenSolver<M>(r).eigenvectors())
                             : M(M::Identity(cols, cols));
    M const rotated = ql.transpose() * gm * qr;
    v = 0.9 * v + 0.1 * rotated.cwiseProduct(rotated);
    M const scaled = rotated.array() / (v.array().pow(exponent) + 1e-6);
    wr -= 0.01 * (ql * scaled * qr.transpose());
    for (index_t i = 0; i < rows; ++i)
      for (index_t j = 0; j < cols; ++j)
        EXPECT_NEAR(w[static_cast<std::size_t>(i * cols + j)], wr(i, j), 1e-9)
            << "step " << t << " (" << i << ", " << j << ")";
    if (t == 2) {
      mid = opt.state_dict();
      w_mid = w;
    }
  }
  std::size_t const kept = static_cast<std::size_t>(rotate_rows) + (rotate_cols ? 1 : 0);
  EXPECT_EQ(opt.preconditioned_dims(0).size(), kept);
  for (std::size_t j = 0; j < 2; ++j) {
    StateKey const key{"0", "block_0", "shampoo", "factor_matrices_eigenvectors",
                       std::to_string(j)};
    EXPECT_EQ(mid.contains(key), j < kept) << state_key_text(key);
  }
  EXPECT_TRUE(mid.contains({"0", "block_0", "shampoo", "corrected_eigenvalues"}));
  Shampoo<double> resumed(plan_for({{rows, cols}}), o);
  resumed.load_state_dict(mid);
  for (unsigned t = 3; t <= 4; ++t) {
    std::vector<double> const g = random_values(n, 30 + t);
    resumed.step({std::span<double>(w_mid)}, {std::span<double const>(g)});
  }
  EXPECT_EQ(w_mid, w);
}

TEST(EigenvalueCorrected, StepsFollowTheRotatedSecondMomentAndTheStateRoundTrips) {
  expect_eigenvalue_corrected_steps(4, 3, {});
  expect_eigenvalue_corrected_steps(3, 4, {});
  Options warned;
  warned.preconditioner = PreconditionerType::eigenvalue_corrected;
  warned.use_trace_scaling = true;
  warned.root.eigen.pseudo_inverse = true;
  EXPECT_EQ(ignored_options(warned),
            std::vector<std::string>{"the eigen root settings, use_trace_scaling have no effect "
                                     "with eigenvalue-corrected Shampoo, which computes "
                                     "eigenvectors, not roots."});
}

// inverse_exponent_override is the power of the corrected eigenvalues (Distributed Shampoo: one
// exponent per order for this config, default 1/2): the direction divides by V^e + epsilon.
TEST(EigenvalueCorrected, InverseExponentOverrideIsThePowerOfTheCorrectedEigenvalues) {
  for (double const e : {0.25, 1.0}) {
    expect_eigenvalue_corrected_steps(4, 3, {}, e);
    expect_eigenvalue_corrected_steps(3, 4, {1}, e);
  }
  Options bad;
  bad.preconditioner = PreconditionerType::eigenvalue_corrected;
  bad.inverse_exponent_override[2] = 0.0;
  EXPECT_EQ(error_of([&] { validate(bad); }),
            "inverse_exponent_override[2] is 0; eigenvalue-corrected Shampoo raises its corrected "
            "eigenvalues to this power, which must be > 0.");
  bad.inverse_exponent_override[2] = std::map<index_t, double>{{0, 0.25}};
  EXPECT_EQ(error_of([&] { validate(bad); }),
            "inverse_exponent_override[2] gives per-dimension exponents, but eigenvalue-corrected "
            "Shampoo takes one exponent per order (the power of its corrected eigenvalues).");
  // The same map is fine for Shampoo, which takes per-dimension exponents.
  bad.preconditioner = PreconditionerType::shampoo;
  EXPECT_NO_THROW(validate(bad));
}

// ignored_basis_change_dims: an ignored dimension keeps the gradient's own basis; ignoring both
// is Adam's per-element scaling. Bad settings are refused, unused ones warned.
TEST(EigenvalueCorrected, IgnoredBasisChangeDimsKeepTheirDimensionsUnrotated) {
  for (std::vector<index_t> const& ignored :
       {std::vector<index_t>{0}, std::vector<index_t>{1}, std::vector<index_t>{1, 0}}) {
    expect_eigenvalue_corrected_steps(4, 3, ignored);
    expect_eigenvalue_corrected_steps(3, 4, ignored);
  }
  Options bad;
  bad.preconditioner = PreconditionerType::eigenvalue_corrected;
  bad.ignored_basis_change_dims[-1] = {0};
  EXPECT_EQ(error_of([&] { validate(bad); }),
            "ignored_basis_change_dims has the order -1; orders must be >= 0.");
  bad.ignored_basis_change_dims = {{2, {2}}};
  EXPECT_EQ(error_of([&] { validate(bad); }),
            "ignored_basis_change_dims[2] names dimension 2; dimensions must be in [0, 1].");
  bad.ignored_basis_change_dims = {{3, {1, 1}}};
  EXPECT_EQ(error_of([&] { validate(bad); }),
            "ignored_basis_change_dims[3] names dimension 1 twice; each dimension once.");
  Options unused;
  unused.ignored_basis_change_dims[2] = {0};
  EXPECT_EQ(ignored_options(unused),
            std::vector<std::string>{"ignored_basis_change_dims has no effect with shampoo "
                                     "(eigenvalue-corrected Shampoo uses it)."});
}

// keep_rotated_filtered_grad filters the direction in the eigenbasis instead of rotating it: the
// parameters follow the default's to rounding (and differ from them in the last bits, so the
// option's path ran) through eigenbasis refreshes (every third step), beta3 equal to beta1 and
// not, an ignored dimension, a 1-D block, a step that skips a parameter (its filtered gradient
// goes back, so the rotated copy is derived again at the next refresh) and a resume from a state
// dictionary, which holds the same keys as the default's (the rotated copy is not saved).
TEST(EigenvalueCorrected, KeepRotatedFilteredGradFollowsTheDefaultToRounding) {
  std::vector<std::vector<index_t>> const shapes{{5, 4}, {6}, {3, 7}};
  for (double const beta3 : {-1.0, 0.5}) {
    for (bool const ignore : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "beta3 " << beta3 << ", ignored dimension " << ignore);
      Options o;
      o.preconditioner = PreconditionerType::eigenvalue_corrected;
      o.beta1 = 0.9;
      o.beta3 = beta3;
      o.beta2 = 0.95;
      o.epsilon = 1e-8;
      o.lr = 0.01;
      o.precondition_frequency = 3;
      o.start_preconditioning_step = 3;
      o.grafting = adam_grafting();
      o.factor_matrix_dtype = DType::f64;
      if (ignore) o.ignored_basis_change_dims[2] = {1};
      Options kept = o;
      kept.keep_rotated_filtered_grad = true;
      EXPECT_EQ(ignored_options(kept), std::vector<std::string>{});
      // `resumed` steps on other gradients until it loads fast's state after step 4, between
      // refreshes: what it kept rotated then is not that state's.
      Shampoo<double> plain(plan_for(shapes), o), fast(plan_for(shapes), kept),
          resumed(plan_for(shapes), kept);
      std::vector<std::vector<double>> w, wf, wr;
      for (std::size_t p = 0; p < shapes.size(); ++p) {
        index_t n = 1;
        for (index_t e : shapes[p]) n *= e;
        w.push_back(random_values(static_cast<std::size_t>(n), 40 + static_cast<unsigned>(p)));
      }
      wf = w;
      wr = w;
      bool differs = false;
      for (unsigned t = 1; t <= 11; ++t) {
        std::vector<std::vector<double>> g;
        for (std::size_t p = 0; p < shapes.size(); ++p)
          g.push_back(random_values(w[p].size(), 100 * t + static_cast<unsigned>(p)));
        std::vector<std::span<double const>> gs(g.begin(), g.end());
        if (t == 7) gs[2] = {};  // a steady step that skips the third parameter
        auto spans = [](std::vector<std::vector<double>>& v) {
          return std::vector<std::span<double>>(v.begin(), v.end());
        };
        plain.step(spans(w), gs);
        fast.step(spans(wf), gs);
        if (t <= 4) {
          std::vector<std::vector<double>> other;
          for (std::size_t p = 0; p < shapes.size(); ++p)
            other.push_back(random_values(w[p].size(), 900 + 10 * t + static_cast<unsigned>(p)));
          resumed.step(spans(wr), std::vector<std::span<double const>>(other.begin(), other.end()));
        } else {
          resumed.step(spans(wr), gs);
        }
        for (std::size_t p = 0; p < shapes.size(); ++p)
          for (std::size_t i = 0; i < w[p].size(); ++i) {
            EXPECT_NEAR(wf[p][i], w[p][i], 1e-12) << "step " << t << ", parameter " << p;
            if (t > 4) {
              EXPECT_NEAR(wr[p][i], w[p][i], 1e-12) << "resumed, step " << t;
            }
            differs = differs || wf[p][i] != w[p][i];
          }
        if (t == 4) {
          StateDict const state = fast.state_dict();
          EXPECT_EQ(state.size(), plain.state_dict().size());
          for (auto const& [key, tensor] : plain.state_dict())
            EXPECT_TRUE(state.contains(key)) << state_key_text(key);
          resumed.load_state_dict(state);
          wr = wf;
        }
      }
      EXPECT_TRUE(differs) << "the option's steps are the default's bit for bit: did it run?";
    }
  }
}

TEST(EigenvalueCorrected, KeepRotatedFilteredGradIsWarnedWhereItHasNoEffect) {
  Options o;
  o.keep_rotated_filtered_grad = true;
  EXPECT_EQ(ignored_options(o),
            std::vector<std::string>{"keep_rotated_filtered_grad has no effect with shampoo "
                                     "(eigenvalue-corrected Shampoo uses it)."});
  o.preconditioner = PreconditionerType::eigenvalue_corrected;
  o.beta1 = 0.0;
  EXPECT_EQ(ignored_options(o),
            std::vector<std::string>{
                "keep_rotated_filtered_grad has no effect with beta1 0: the direction is the "
                "gradient, whose rotation the corrected eigenvalues already compute."});
}

// Eigendecomposed Shampoo's state: the eigenvectors and eigenvalues of F / bc2 + epsilon I (the
// identity and ones before the first amortized step) under Distributed Shampoo's keys, resumed
// bit for bit; its settings' warnings and the pseudo-inverse whatever the root method says.
TEST(Eigendecomposed, TheStateIsTheFactorsEigendecompositionAndRoundTrips) {
  using M = Eigen::MatrixXd;
  index_t const rows = 4, cols = 3;
  Options o;
  o.preconditioner = PreconditionerType::eigendecomposed;
  o.beta2 = 0.9;
  o.epsilon = 1e-3;
  o.precondition_frequency = 2;
  o.factor_matrix_dtype = DType::f64;
  Shampoo<double> opt(plan_for({{rows, cols}}), o);
  StateDict const fresh = opt.state_dict();
  StateKey const values{"0", "block_0", "shampoo", "factor_matrices_eigenvalues", "0"};
  StateKey const vectors{"0", "block_0", "shampoo", "factor_matrices_eigenvectors", "1"};
  ASSERT_TRUE(fresh.contains(values));
  ASSERT_TRUE(fresh.contains(vectors));
  EXPECT_FALSE(fresh.contains({"0", "block_0", "shampoo", "inv_factor_matrices", "0"}));
  EXPECT_EQ(fresh.at(values).shape, std::vector<index_t>{rows});
  EXPECT_EQ(fresh.at(vectors).shape, (std::vector<index_t>{cols, cols}));
  auto const doubles = [](StateTensor const& t) {
    std::vector<double> v(t.data.size() / sizeof(double));
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
  };
  EXPECT_EQ(doubles(fresh.at(values)), std::vector<double>(static_cast<std::size_t>(rows), 1.0));
  auto const n = static_cast<std::size_t>(rows * cols);
  std::vector<double> w = random_values(n, 5);
  M l = M::Zero(rows, rows);
  StateDict mid;
  std::vector<double> w_mid;
  for (unsigned t = 1; t <= 4; ++t) {
    std::vector<double> const g = random_values(n, 40 + t);
    opt.step({std::span<double>(w)}, {std::span<double const>(g)});
    M const gm =
        Eigen::Map<Eigen::Matrix<double, -1, -1, Eigen::RowMajor> const>(g.data(), rows, cols);
    l = 0.9 * l + 0.1 * gm * gm.transpose();
    if (t == 2 || t == 4) {  // amortized: eig(L / bc2 + epsilon I), ascending
      M const a = l / (1.0 - std::pow(0.9, t)) + 1e-3 * M::Identity(rows, rows);
      Eigen::SelfAdjointEigenSolver<M> const es(a);
      StateDict const now = opt.state_dict();
      std::vector<double> const lambda = doubles(now.at(values));
      std::vector<double> const q =
          doubles(now.at({"0", "block_0", "shampoo", "factor_matrices_eigenvectors", "0"}));
      for (index_t i = 0; i < rows; ++i) {
        EXPECT_NEAR(lambda[static_cast<std::size_t>(i)], es.eigenvalues()(i), 1e-12) << t;
        // Each eigenvector up to its sign: |q_i . e_i| = 1.
        double dot = 0.0;
        for (index_t k = 0; k < rows; ++k)
          dot += q[static_cast<std::size_t>(k * rows + i)] * es.eigenvectors()(k, i);
        EXPECT_NEAR(std::abs(dot), 1.0, 1e-9) << t << " eigenvector " << i;
      }
    }
    if (t == 2) {
      mid = opt.state_dict();
      w_mid = w;
    }
  }
  Shampoo<double> resumed(plan_for({{rows, cols}}), o);
  resumed.load_state_dict(mid);
  for (unsigned t = 3; t <= 4; ++t) {
    std::vector<double> const g = random_values(n, 40 + t);
    resumed.step({std::span<double>(w_mid)}, {std::span<double const>(g)});
  }
  EXPECT_EQ(w_mid, w);
  // A shampoo state has other keys: loading it names the first one missing.
  Options plain = o;
  plain.preconditioner = PreconditionerType::shampoo;
  Shampoo<double> other(plan_for({{rows, cols}}), plain);
  EXPECT_NE(error_of([&] { other.load_state_dict(mid); }).find("inv_factor_matrices"),
            std::string::npos);

  Options warned = o;
  warned.root.method = RootMethod::coupled_newton;
  warned.root.eigen.rank_atol = 0.5;
  EXPECT_EQ(ignored_options(warned),
            (std::vector<std::string>{
                "the root method coupled Newton and its settings have no effect with "
                "eigendecomposed Shampoo, which decomposes the factors.",
                "rank_atol 0.5 and rank_rtol 0 have no effect without the pseudo-inverse."}));
  Options pinv = warned;
  pinv.root.eigen.pseudo_inverse = true;
  pinv.root.eigen.rank_atol = 0.0;
  EXPECT_NE(error_of([&] { validate(pinv); }).find("epsilon must be 0"), std::string::npos);
  pinv.epsilon = 0.0;
  EXPECT_EQ(error_of([&] { validate(pinv); }), "no error");
  Options kl;
  kl.preconditioner = PreconditionerType::sign_descent;
  kl.kl_shampoo = true;
  EXPECT_EQ(ignored_options(kl),
            std::vector<std::string>{"kl_shampoo has no effect with sign descent (shampoo, "
                                     "eigendecomposed and eigenvalue-corrected Shampoo use it)."});
  kl.preconditioner = PreconditionerType::eigenvalue_corrected;  // KL-SOAP
  EXPECT_EQ(ignored_options(kl), std::vector<std::string>{});
}

// The QR iteration written in plain loops (modified Gram-Schmidt for the QR factorization, whose
// Q differs from Householder's by column signs only, which change no eigenvalue estimate and flip
// the eigenvectors' signs): max_iterations times B = Q_k R_k, Q <- Q Q_k, B <- Q_k^T B Q_k,
// stopping when ||B - diag B||_F <= tolerance ||B||_F; then the columns ordered by diag(B).
struct QrReference {
  Matrix q;
  std::vector<double> lambda;
};

QrReference qr_reference(Matrix const& a, Matrix q, index_t d, index_t iterations,
                         double tolerance) {
  Matrix b = multiply(multiply(transpose(q, d, d), a, d, d, d), q, d, d, d);
  auto const at = [d](Matrix& m, index_t i, index_t j) -> double& {
    return m[static_cast<std::size_t>(i * d + j)];
  };
  for (index_t it = 0; it < iterations; ++it) {
    double total = 0.0, diagonal = 0.0;
    for (index_t i = 0; i < d; ++i)
      for (index_t j = 0; j < d; ++j) total += at(b, i, j) * at(b, i, j);
    for (index_t i = 0; i < d; ++i) diagonal += at(b, i, i) * at(b, i, i);
    if (std::sqrt(total - diagonal) <= tolerance * std::sqrt(total)) break;
    Matrix qk = b;  // columns orthonormalized in place
    for (index_t j = 0; j < d; ++j) {
      for (index_t k = 0; k < j; ++k) {
        double dot = 0.0;
        for (index_t i = 0; i < d; ++i) dot += at(qk, i, k) * at(qk, i, j);
        for (index_t i = 0; i < d; ++i) at(qk, i, j) -= dot * at(qk, i, k);
      }
      double norm = 0.0;
      for (index_t i = 0; i < d; ++i) norm += at(qk, i, j) * at(qk, i, j);
      for (index_t i = 0; i < d; ++i) at(qk, i, j) /= std::sqrt(norm);
    }
    b = multiply(multiply(transpose(qk, d, d), b, d, d, d), qk, d, d, d);
    q = multiply(q, qk, d, d, d);
  }
  std::vector<index_t> order(static_cast<std::size_t>(d));
  for (index_t i = 0; i < d; ++i) order[static_cast<std::size_t>(i)] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](index_t i, index_t j) { return at(b, i, i) < at(b, j, j); });
  QrReference out{Matrix(q.size()), {}};
  for (index_t j = 0; j < d; ++j) {
    index_t const from = order[static_cast<std::size_t>(j)];
    out.lambda.push_back(at(b, from, from));
    for (index_t i = 0; i < d; ++i) at(out.q, i, j) = at(q, i, from);
  }
  return out;
}

// A symmetric d x d matrix V diag(spectrum) V^T, V a random orthogonal matrix.
Matrix with_spectrum(std::vector<double> const& spectrum, unsigned seed) {
  auto const d = static_cast<index_t>(spectrum.size());
  std::vector<double> const r = random_values(spectrum.size() * spectrum.size(), seed);
  Eigen::MatrixXd const v =
      Eigen::HouseholderQR<Eigen::MatrixXd>(
          Eigen::Map<Eigen::Matrix<double, -1, -1, Eigen::RowMajor> const>(r.data(), d, d))
          .householderQ();
  Eigen::VectorXd s(d);
  for (index_t i = 0; i < d; ++i) s(i) = spectrum[static_cast<std::size_t>(i)];
  Eigen::Matrix<double, -1, -1, Eigen::RowMajor> const a = v * s.asDiagonal() * v.transpose();
  return Matrix(a.data(), a.data() + d * d);
}

Matrix identity(index_t d) {
  Matrix q(static_cast<std::size_t>(d * d), 0.0);
  for (index_t i = 0; i < d; ++i) q[static_cast<std::size_t>(i * d + i)] = 1.0;
  return q;
}

// The library's QR iteration on a batch of two matrices, from `start`.
QrReference library_qr(std::vector<Matrix> const& a, Matrix const& start, index_t d,
                       index_t iterations, double tolerance, double ridge = 0.0) {
  using B = exec::Memory<exec::Serial>;
  auto const count = static_cast<index_t>(a.size());
  std::vector<double> in, q, lambda(static_cast<std::size_t>(count * d));
  for (auto const& m : a) {
    in.insert(in.end(), m.begin(), m.end());
    q.insert(q.end(), start.begin(), start.end());
  }
  std::vector<RootResult> results(static_cast<std::size_t>(count));
  auto const layout = make_layout(make_shape(count, d, d));
  qr_iteration<double>(exec::Serial{}, B::view(static_cast<double const*>(in.data()), layout),
                       B::view(q.data(), layout), lambda.data(), count, d, ridge, iterations,
                       tolerance, std::span<RootResult>(results));
  for (auto const& r : results) EXPECT_TRUE(r.ok());
  return {q, lambda};
}

// Column j of a and b (d x d row-major) agree up to its sign.
void expect_columns_up_to_sign(Matrix const& a, Matrix const& b, index_t d, double tolerance,
                               std::string const& what) {
  for (index_t j = 0; j < d; ++j) {
    double dot = 0.0;
    for (index_t i = 0; i < d; ++i)
      dot += a[static_cast<std::size_t>(i * d + j)] * b[static_cast<std::size_t>(i * d + j)];
    double const s = dot < 0.0 ? -1.0 : 1.0;
    for (index_t i = 0; i < d; ++i)
      EXPECT_NEAR(a[static_cast<std::size_t>(i * d + j)],
                  s * b[static_cast<std::size_t>(i * d + j)], tolerance)
          << what << " column " << j << " row " << i;
  }
}

TEST(QrIteration, MatchesAPlainLoopReferenceFromIdentityAndFromAWarmStart) {
  index_t const d = 5;
  std::vector<Matrix> const a = {with_spectrum({0.5, 1.0, 2.0, 4.0, 8.0}, 3),
                                 with_spectrum({1e-3, 0.2, 0.3, 3.0, 9.0}, 4)};
  Matrix const warm = with_spectrum({1, 2, 3, 4, 5}, 9);  // symmetric; made orthogonal below
  Eigen::MatrixXd const wq =
      Eigen::HouseholderQR<Eigen::MatrixXd>(
          Eigen::Map<Eigen::Matrix<double, -1, -1, Eigen::RowMajor> const>(warm.data(), d, d))
          .householderQ();
  Eigen::Matrix<double, -1, -1, Eigen::RowMajor> const wr = wq;
  Matrix const start_warm(wr.data(), wr.data() + d * d);
  for (Matrix const& start : {identity(d), start_warm})
    for (index_t iterations : {0, 1, 3}) {
      QrReference const got = library_qr(a, start, d, iterations, 0.0);
      for (std::size_t b = 0; b < a.size(); ++b) {
        QrReference const want = qr_reference(a[b], start, d, iterations, 0.0);
        std::string const what =
            "matrix " + std::to_string(b) + ", " + std::to_string(iterations) + " iterations";
        for (index_t i = 0; i < d; ++i)
          EXPECT_NEAR(got.lambda[b * d + static_cast<std::size_t>(i)],
                      want.lambda[static_cast<std::size_t>(i)], 1e-12)
              << what;
        Matrix const qb(got.q.begin() + static_cast<std::ptrdiff_t>(b * d * d),
                        got.q.begin() + static_cast<std::ptrdiff_t>((b + 1) * d * d));
        expect_columns_up_to_sign(qb, want.q, d, 1e-12, what);
      }
    }
}

TEST(QrIteration, ConvergesToEighForSeparatedSpectraAndStopsAtItsTolerance) {
  index_t const d = 6;
  std::vector<double> const spectrum = {0.1, 0.4, 1.0, 2.5, 6.0, 15.0};
  std::vector<Matrix> const a = {with_spectrum(spectrum, 11), with_spectrum(spectrum, 12)};
  QrReference const got = library_qr(a, identity(d), d, 200, 0.0);
  for (std::size_t b = 0; b < a.size(); ++b) {
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> const es(
        Eigen::Map<Eigen::Matrix<double, -1, -1, Eigen::RowMajor> const>(a[b].data(), d, d));
    Eigen::Matrix<double, -1, -1, Eigen::RowMajor> const v = es.eigenvectors();
    for (index_t i = 0; i < d; ++i)
      EXPECT_NEAR(got.lambda[b * d + static_cast<std::size_t>(i)], es.eigenvalues()(i), 1e-10);
    Matrix const qb(got.q.begin() + static_cast<std::ptrdiff_t>(b * d * d),
                    got.q.begin() + static_cast<std::ptrdiff_t>((b + 1) * d * d));
    // Tolerance 0 still stops once ||B||^2 - ||diag B||^2 rounds to 0 (off-diagonal ~1e-8
    // relative), as Distributed Shampoo's criterion does: the vectors are that close, no closer.
    expect_columns_up_to_sign(qb, Matrix(v.data(), v.data() + d * d), d, 1e-7,
                              "matrix " + std::to_string(b));
  }
  // With a tolerance the iteration stops at the first estimate within it, as the reference does.
  for (double tolerance : {1e-2, 1e-5}) {
    QrReference const stopped = library_qr(a, identity(d), d, 200, tolerance);
    QrReference const want = qr_reference(a[0], identity(d), d, 200, tolerance);
    for (index_t i = 0; i < d; ++i)
      EXPECT_NEAR(stopped.lambda[static_cast<std::size_t>(i)],
                  want.lambda[static_cast<std::size_t>(i)], 1e-12)
          << tolerance;
  }
  // A tolerance of 1 is met by any estimate: no iteration, Q reordered by diag(A) only.
  QrReference const kept = library_qr(a, identity(d), d, 5, 1.0);
  QrReference const none = qr_reference(a[0], identity(d), d, 0, 0.0);
  for (std::size_t i = 0; i < static_cast<std::size_t>(d * d); ++i) EXPECT_EQ(kept.q[i], none.q[i]);
}

// Eigenvalue-corrected Shampoo with the QR iteration (DefaultSOAPConfig): the eigenvectors after
// each amortized step are the reference iteration's from the previous ones (the identity at
// first), on F / bc2 + epsilon I; resumed from a saved state, the run continues bit for bit.
TEST(QrIteration, EigenvalueCorrectedWarmStartsFromItsStateAndRoundTrips) {
  index_t const rows = 4, cols = 3;
  Options o;
  o.preconditioner = PreconditionerType::eigenvalue_corrected;
  o.root.eigendecomposition.method = EigendecompositionMethod::qr;
  o.beta2 = 0.9;
  o.epsilon = 1e-6;
  o.factor_matrix_dtype = DType::f64;
  EXPECT_TRUE(ignored_options(o).empty());
  Shampoo<double> opt(plan_for({{rows, cols}}), o);
  auto const n = static_cast<std::size_t>(rows * cols);
  std::vector<double> w = random_values(n, 7);
  Matrix l(static_cast<std::size_t>(rows * rows), 0.0), ql = identity(rows);
  StateKey const key{"0", "block_0", "shampoo", "factor_matrices_eigenvectors", "0"};
  StateDict mid;
  std::vector<double> w_mid;
  for (unsigned t = 1; t <= 5; ++t) {
    std::vector<double> const g = random_values(n, 60 + t);
    opt.step({std::span<double>(w)}, {std::span<double const>(g)});
    Matrix const ggt = multiply(g, transpose(g, rows, cols), rows, cols, rows);
    double const bc2 = 1.0 - std::pow(0.9, t);
    Matrix a(l.size());
    for (std::size_t i = 0; i < l.size(); ++i) {
      l[i] = 0.9 * l[i] + 0.1 * ggt[i];
      a[i] = l[i] / bc2;
    }
    for (index_t i = 0; i < rows; ++i) a[static_cast<std::size_t>(i * rows + i)] += 1e-6;
    ql = qr_reference(a, ql, rows, 1, 0.0).q;
    StateDict const now = opt.state_dict();
    std::vector<double> q(static_cast<std::size_t>(rows * rows));
    std::memcpy(q.data(), now.at(key).data.data(), q.size() * sizeof(double));
    expect_columns_up_to_sign(q, ql, rows, 1e-8, "step " + std::to_string(t));
    for (index_t j = 0; j < rows; ++j)  // the reference's signs from here on: the library's
      for (index_t i = 0; i < rows; ++i)
        ql[static_cast<std::size_t>(i * rows + j)] = q[static_cast<std::size_t>(i * rows + j)];
    if (t == 2) {
      mid = opt.state_dict();
      w_mid = w;
    }
  }
  Shampoo<double> resumed(plan_for({{rows, cols}}), o);
  resumed.load_state_dict(mid);
  for (unsigned t = 3; t <= 5; ++t) {
    std::vector<double> const g = random_values(n, 60 + t);
    resumed.step({std::span<double>(w_mid)}, {std::span<double const>(g)});
  }
  EXPECT_EQ(w_mid, w);
  EXPECT_EQ(resumed.state_dict().at(key).data, opt.state_dict().at(key).data);
}

// Eigendecomposed Shampoo: many QR iterations reach eigh's eigendecomposition; eigh's tolerance
// of 1 skips every decomposition, so the eigenvectors stay the identity and the eigenvalues are
// the diagonal of F / bc2 + epsilon I, unsorted (Distributed Shampoo's estimate).
TEST(QrIteration, EigendecomposedReachesEighAndEighsToleranceSkips) {
  index_t const rows = 4, cols = 3;
  Options o;
  o.preconditioner = PreconditionerType::eigendecomposed;
  o.beta2 = 0.9;
  o.epsilon = 1e-3;
  o.factor_matrix_dtype = DType::f64;
  Options qr = o;
  qr.root.eigendecomposition = {EigendecompositionMethod::qr, 0.0, 500};
  Options skipping = o;
  skipping.root.eigendecomposition.tolerance = 1.0;
  Shampoo<double> by_eigh(plan_for({{rows, cols}}), o), by_qr(plan_for({{rows, cols}}), qr),
      skipped(plan_for({{rows, cols}}), skipping);
  auto const n = static_cast<std::size_t>(rows * cols);
  std::vector<double> w1 = random_values(n, 8), w2 = w1, w3 = w1;
  Matrix l(static_cast<std::size_t>(rows * rows), 0.0);
  auto const doubles = [](StateTensor const& t) {
    std::vector<double> v(t.data.size() / sizeof(double));
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
  };
  StateKey const values{"0", "block_0", "shampoo", "factor_matrices_eigenvalues", "0"};
  StateKey const vectors{"0", "block_0", "shampoo", "factor_matrices_eigenvectors", "0"};
  for (unsigned t = 1; t <= 3; ++t) {
    std::vector<double> const g = random_values(n, 80 + t);
    by_eigh.step({std::span<double>(w1)}, {std::span<double const>(g)});
    by_qr.step({std::span<double>(w2)}, {std::span<double const>(g)});
    skipped.step({std::span<double>(w3)}, {std::span<double const>(g)});
    Matrix const ggt = multiply(g, transpose(g, rows, cols), rows, cols, rows);
    for (std::size_t i = 0; i < l.size(); ++i) l[i] = 0.9 * l[i] + 0.1 * ggt[i];
    std::vector<double> const le = doubles(by_eigh.state_dict().at(values));
    std::vector<double> const lq = doubles(by_qr.state_dict().at(values));
    for (index_t i = 0; i < rows; ++i)
      EXPECT_NEAR(lq[static_cast<std::size_t>(i)], le[static_cast<std::size_t>(i)], 1e-10) << t;
    if (t == 3)  // rank 3 plus the ridge: distinct eigenvalues, unique eigenvectors
      expect_columns_up_to_sign(doubles(by_qr.state_dict().at(vectors)),
                                doubles(by_eigh.state_dict().at(vectors)), rows, 1e-7,
                                "step " + std::to_string(t));
    EXPECT_EQ(doubles(skipped.state_dict().at(vectors)), identity(rows));
    std::vector<double> const ls = doubles(skipped.state_dict().at(values));
    double const bc2 = 1.0 - std::pow(0.9, t);
    for (index_t i = 0; i < rows; ++i)
      EXPECT_NEAR(ls[static_cast<std::size_t>(i)],
                  l[static_cast<std::size_t>(i * rows + i)] / bc2 + 1e-3, 1e-14)
          << t;
  }
  for (std::size_t i = 0; i < n; ++i) EXPECT_NEAR(w2[i], w1[i], 1e-9);
}

TEST(QrIteration, SettingsAreValidatedAndWarnedWhereUnused) {
  Options o;
  o.preconditioner = PreconditionerType::eigenvalue_corrected;
  o.root.eigendecomposition.tolerance = 1.5;
  EXPECT_EQ(error_of([&] { validate(o); }),
            "eigendecomposition tolerance must be in [0, 1], got 1.5.");
  o.root.eigendecomposition.tolerance = std::nan("");
  EXPECT_EQ(error_of([&] { validate(o); }),
            "eigendecomposition tolerance must be in [0, 1], got nan.");
  o.root.eigendecomposition.tolerance = 0.1;
  o.root.eigendecomposition.max_iterations = -1;
  EXPECT_EQ(error_of([&] { validate(o); }),
            "eigendecomposition max_iterations must be >= 0, got -1.");
  o.root.eigendecomposition.max_iterations = 2;
  o.root.eigendecomposition.method = static_cast<EigendecompositionMethod>(7);
  EXPECT_EQ(error_of([&] { validate(o); }),
            "eigendecomposition method 7 is not an EigendecompositionMethod.");
  o.root.eigendecomposition.method = EigendecompositionMethod::qr;
  EXPECT_EQ(error_of([&] { validate(o); }), "no error");
  EXPECT_TRUE(ignored_options(o).empty());
  Options unused = o;
  unused.preconditioner = PreconditionerType::shampoo;
  EXPECT_EQ(ignored_options(unused),
            std::vector<std::string>{
                "the eigendecomposition settings (the QR iteration, tolerance 0.1, max_iterations "
                "2) have no effect with shampoo (eigenvalue-corrected and eigendecomposed Shampoo "
                "use them)."});
  Options eigh = o;
  eigh.root.eigendecomposition.method = EigendecompositionMethod::eigh;
  EXPECT_EQ(ignored_options(eigh),
            std::vector<std::string>{
                "eigendecomposition max_iterations 2 has no effect with eigh (the QR iteration "
                "uses it)."});
}

}  // namespace
