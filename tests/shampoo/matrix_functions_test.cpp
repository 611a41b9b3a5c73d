// Inverse roots: diag(1, 4) with root 2 is diag(1, 0.5) by both methods; random SPD matrices by
// eigendecomposition and coupled Newton agree and satisfy X^root A = I; the perturbation rule and
// the pseudo-inverse; reported failures; argument errors.
#include <gtest/gtest.h>

#include <random>
#include <span>
#include <vector>

#include <Eigen/Dense>
#include <tessel/shampoo/matrix_functions.hpp>

namespace {

using namespace tessel;
using namespace tessel::shampoo;
using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

RootConfig eigen_config() {
  return {};
}
RootConfig newton_config() {
  RootConfig c;
  c.method = RootMethod::coupled_newton;
  return c;
}

Mat inverse_root(Mat const& A, double root, double eps, RootConfig const& c,
                 RootStatus expect = RootStatus::ok) {
  Mat X = Mat::Constant(A.rows(), A.cols(), -7.0);
  RootResult r = matrix_inverse_root<double>(A.data(), A.rows(), root, eps, c, X.data());
  EXPECT_EQ(r.status, expect);
  return X;
}

// The retry in double takes the double result exactly where the T solve failed on a finite input
// and the double solve converged; it marks every retried matrix, and clears the failures it mends.
TEST(MatrixInverseRoot, TheRetryInDoubleTakesOnlyMendedFailures) {
  std::vector<RootResult> results(4);
  results[2].status = RootStatus::non_finite_input;
  std::vector<int> info{0, 3, 5, 2};
  std::vector<int> const info64{0, 0, 0, 4};
  std::vector<float> const take =
      tessel::shampoo::detail::retry_choice<float>(std::span<RootResult>(results), info, info64);
  EXPECT_EQ(take, (std::vector<float>{0.0f, 1.0f, 0.0f, 0.0f}));
  EXPECT_EQ(info, (std::vector<int>{0, 0, 5, 2}));
  EXPECT_FALSE(results[0].retried_in_double);
  EXPECT_TRUE(results[1].retried_in_double);
  EXPECT_FALSE(results[2].retried_in_double);
  EXPECT_TRUE(results[3].retried_in_double);
}

TEST(MatrixInverseRoot, DiagonalOneFourWithRootTwo) {
  Mat A(2, 2);
  A << 1, 0, 0, 4;
  Mat expect(2, 2);
  expect << 1, 0, 0, 0.5;
  EXPECT_LT((inverse_root(A, 2, 0.0, eigen_config()) - expect).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_LT((inverse_root(A, 2, 1e-12, eigen_config()) - expect).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((inverse_root(A, 2, 0.0, newton_config()) - expect).cwiseAbs().maxCoeff(), 1e-6);
  Eigen::Matrix<float, 2, 2, Eigen::RowMajor> Af;
  Af << 1, 0, 0, 4;
  Eigen::Matrix<float, 2, 2, Eigen::RowMajor> Xf;
  ASSERT_TRUE(matrix_inverse_root<float>(Af.data(), 2, 2.0, 0.0, eigen_config(), Xf.data()).ok());
  EXPECT_FLOAT_EQ(Xf(0, 0), 1.0f);
  EXPECT_FLOAT_EQ(Xf(1, 1), 0.5f);
  EXPECT_FLOAT_EQ(Xf(0, 1), 0.0f);
}

Mat random_spd(int d, std::mt19937& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  Mat G(d, 2 * d);
  for (int i = 0; i < G.size(); ++i) G.data()[i] = n(rng);
  return G * G.transpose() / (2.0 * d) + 0.1 * Mat::Identity(d, d);
}

Mat power(Mat const& X, int p) {
  Mat out = Mat::Identity(X.rows(), X.cols());
  for (int i = 0; i < p; ++i) out = out * X;
  return out;
}

TEST(MatrixInverseRoot, MethodsAgreeOnRandomSpdMatrices) {
  std::mt19937 rng(3);
  for (int d : {1, 3, 8, 20}) {
    for (int root : {1, 2, 4, 6}) {
      Mat A = random_spd(d, rng);
      Mat Xe = inverse_root(A, root, 1e-12, eigen_config());
      Mat Xn = inverse_root(A, root, 1e-12, newton_config());
      EXPECT_LT((Xe - Xn).cwiseAbs().maxCoeff(), 1e-5) << d << " " << root;
      Mat I = power(Xe, root) * A;
      EXPECT_LT((I - Mat::Identity(d, d)).cwiseAbs().maxCoeff(), 1e-9) << d << " " << root;
    }
  }
}

TEST(MatrixInverseRoot, NonIntegerRootsByEigendecomposition) {
  Mat A(1, 1);
  A << 8.0;
  EXPECT_NEAR(inverse_root(A, 1.5, 0.0, eigen_config())(0, 0), 0.25, 1e-14);  // 8^(-2/3)
}

TEST(MatrixInverseRoot, PerturbationShiftsTheSmallestEigenvalueToEpsilon) {
  // A + 0.1 I = diag(-0.9, 4.1) is not PSD: shifted by 1.0 to diag(0.1, 5.1).
  Mat A(2, 2);
  A << -1, 0, 0, 4;
  Mat X = inverse_root(A, 2, 0.1, eigen_config());
  EXPECT_NEAR(X(0, 0), 1.0 / std::sqrt(0.1), 1e-12);
  EXPECT_NEAR(X(1, 1), 1.0 / std::sqrt(5.1), 1e-12);
  // Without perturbing first: shift by -min(lambda_min, 0) = 1, then add epsilon.
  RootConfig after = eigen_config();
  after.eigen.perturb_before_computation = false;
  X = inverse_root(A, 2, 0.1, after);
  EXPECT_NEAR(X(0, 0), 1.0 / std::sqrt(0.1), 1e-12);
  EXPECT_NEAR(X(1, 1), 1.0 / std::sqrt(5.1), 1e-12);
}

TEST(MatrixInverseRoot, FloatPerturbationKeepsATinyEpsilon) {
  // In float, -lambda_min + 1e-12 rounds to -lambda_min; shifting in two additions still leaves
  // the smallest eigenvalue at epsilon instead of 0 (which would give an infinite root).
  Eigen::Matrix<float, 2, 2, Eigen::RowMajor> A, X;
  A << -1e-3f, 0, 0, 4;
  ASSERT_TRUE(matrix_inverse_root<float>(A.data(), 2, 2.0, 1e-12, RootConfig{}, X.data()).ok());
  EXPECT_NEAR(X(0, 0), 1e6f, 1.0f);
  EXPECT_TRUE(std::isfinite(X(1, 1)));
}

TEST(MatrixInverseRoot, PseudoInverseDropsTheNullSpace) {
  Mat A(2, 2);
  A << 0, 0, 0, 4;
  RootConfig c = eigen_config();
  c.eigen.pseudo_inverse = true;
  Mat X = inverse_root(A, 2, 0.0, c);
  EXPECT_NEAR(X(0, 0), 0.0, 1e-15);
  EXPECT_NEAR(X(1, 1), 0.5, 1e-15);
  c.eigen.rank_atol = 5.0;  // everything at or below 5 counts as zero
  X = inverse_root(A, 2, 0.0, c);
  EXPECT_EQ(X.cwiseAbs().maxCoeff(), 0.0);
}

TEST(MatrixInverseRoot, ReportsFailuresWithoutWriting) {
  std::mt19937 rng(5);
  Mat A = random_spd(6, rng);
  RootConfig c = newton_config();
  c.coupled_newton.max_iterations = 1;
  Mat X = inverse_root(A, 4, 0.0, c, RootStatus::not_converged);
  EXPECT_EQ(X(0, 0), -7.0);
  Mat Z = Mat::Zero(3, 3);  // |A|_F = 0: the iteration's scale is infinite
  X = inverse_root(Z, 2, 0.0, newton_config(), RootStatus::non_finite);
  EXPECT_EQ(X(0, 0), -7.0);
  EXPECT_TRUE(matrix_inverse_root<double>(nullptr, 0, 2.0, 0.0, eigen_config(), nullptr).ok());
}

TEST(MatrixInverseRoot, ArgumentErrors) {
  auto message = [](auto f) {
    try {
      f();
    } catch (Error const& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([] { check_root_arguments(0.0, 0.0, RootConfig{}); }),
            "the root must be > 0, got 0.");
  EXPECT_EQ(message([] { check_root_arguments(2.0, -1e-3, RootConfig{}); }),
            "epsilon must be >= 0, got -0.001.");
  RootConfig pinv;
  pinv.eigen.pseudo_inverse = true;
  EXPECT_EQ(message([&] { check_root_arguments(2.0, 1e-12, pinv); }),
            "epsilon must be 0 when the pseudo-inverse is used, got 1e-12.");
  EXPECT_EQ(message([] { check_root_arguments(2.5, 0.0, newton_config()); }),
            "coupled Newton needs a whole-number root, got 2.5.");
  EXPECT_EQ(message([] { check_root_arguments(2.5, 0.0, RootConfig{}); }), "no error");
  // A method outside the enumeration (validate() refuses it in Options; the batched entry point
  // refuses it too rather than fall back to some method).
  RootConfig unknown;
  unknown.method = static_cast<RootMethod>(7);
  double const a[1] = {4.0};
  double x[1] = {-1.0};
  EXPECT_EQ(message([&] { matrix_inverse_root<double>(a, 1, 2.0, 0.0, unknown, x); }),
            "root method 7 is not a RootMethod.");
  EXPECT_EQ(x[0], -1.0);
}

}  // namespace
