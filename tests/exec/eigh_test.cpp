// exec::eigh on the host: eigenpairs of random symmetric matrices in either storage order (A q_j =
// lambda_j q_j, orthonormal Q, ascending lambda), batches and single matrices, only the lower
// triangle read, sizes around the LAPACK path's blocks of 64 reflectors (kernels/syevd.cpp), reflectors
// that are the identity, repeated eigenvalues, matrices scaled into range as ?syevd does, every
// executor giving the same bits, a failed solve reported per matrix in info without touching the
// others, and the sentences for operands that do not fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include <tessel/exec/eigh.hpp>
#include <tessel/exec/qr.hpp>
#include <tessel/tessel.hpp>

#include "support/error_of.hpp"

namespace {

using namespace tessel;
using test::error_of;

// batch random symmetric n x n matrices, row-major (batch, n, n).
template <class T>
auto random_symmetric(index_t batch, index_t n, unsigned seed) {
  auto a = make_host_tensor<T>(make_shape(batch, n, n));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (index_t b = 0; b < batch; ++b)
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j <= i; ++j) a(b, i, j) = a(b, j, i) = static_cast<T>(dist(gen));
  return a;
}

// max over b, j of |A q_j - lambda_j q_j| and of |Q^T Q - I|, in double.
template <class A, class Q, class L>
double eigen_residual(A const& a, Q const& q, L const& w, index_t batch, index_t n) {
  double worst = 0.0;
  for (index_t b = 0; b < batch; ++b)
    for (index_t j = 0; j < n; ++j) {
      for (index_t i = 0; i < n; ++i) {
        double aq = 0.0;
        for (index_t k = 0; k < n; ++k)
          aq += static_cast<double>(a(b, i, k)) * static_cast<double>(q(b, k, j));
        worst = std::max(
            worst, std::abs(aq - static_cast<double>(w(b, j)) * static_cast<double>(q(b, i, j))));
      }
      for (index_t l = 0; l < n; ++l) {
        double dot = 0.0;
        for (index_t k = 0; k < n; ++k)
          dot += static_cast<double>(q(b, k, j)) * static_cast<double>(q(b, k, l));
        worst = std::max(worst, std::abs(dot - (j == l ? 1.0 : 0.0)));
      }
    }
  return worst;
}

// The LAPACK path's divide and conquer takes n^2 + 4n + 1 elements of workspace as an int:
// 46338^2 + 4 * 46338 + 1 = 2147395597 fits, 46339^2 + 4 * 46339 + 1 = 2147488278 does not, and
// such matrices go to Eigen.
static_assert(exec::detail::fits_blas_syevd(46338, 46338));
static_assert(!exec::detail::fits_blas_syevd(46339, 46339));
static_assert(!exec::detail::fits_blas_syevd(100, index_t{1} << 31));

template <class T>
class Eigh : public ::testing::Test {};
using Types = ::testing::Types<float, double>;
TYPED_TEST_SUITE(Eigh, Types);

TYPED_TEST(Eigh, EigenpairsOfABatchInEitherStorageOrder) {
  using T = TypeParam;
  index_t const batch = 4, n = 9;
  double const tol = std::is_same_v<T, float> ? 1e-5 : 1e-12;
  auto const a = random_symmetric<T>(batch, n, 1);
  // Row-major: the matrices in place.
  auto q = make_host_tensor<T>(make_shape(batch, n, n));
  assign(q, a, exec::Serial{});
  auto w = make_host_tensor<T>(make_shape(batch, n));
  auto info = make_host_tensor<int>(make_shape(batch));
  for (index_t b = 0; b < batch; ++b) info(b) = -1;
  exec::eigh(exec::Serial{}, w.view(), q.view(), info.view());
  for (index_t b = 0; b < batch; ++b) {
    EXPECT_EQ(info(b), 0);
    for (index_t j = 1; j < n; ++j) EXPECT_LE(w(b, j - 1), w(b, j)) << "ascending";
  }
  EXPECT_LT(eigen_residual(a, q, w, batch, n), tol);
  // Column-major: a transposed view of a compact buffer.
  auto storage = make_host_tensor<T>(make_shape(batch, n, n));
  assign(storage, a, exec::Serial{});
  auto qc = permute<0, 2, 1>(storage.view());
  auto wc = make_host_tensor<T>(make_shape(batch, n));
  exec::eigh(exec::Serial{}, wc.view(), qc, info.view());
  EXPECT_LT(eigen_residual(a, qc, wc, batch, n), tol);
  for (index_t b = 0; b < batch; ++b)
    for (index_t j = 0; j < n; ++j) EXPECT_NEAR(wc(b, j), w(b, j), tol);
}

TYPED_TEST(Eigh, OneMatrixReadsOnlyItsLowerTriangle) {
  using T = TypeParam;
  // 70: the LAPACK path mirrors a row-major matrix's lower triangle over two reflector blocks.
  for (index_t const n : {index_t{5}, index_t{70}}) {
    auto a = random_symmetric<T>(1, n, 2);
    auto m = make_host_tensor<T>(make_shape(n, n));
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < n; ++j)
        m(i, j) = j > i ? std::numeric_limits<T>::quiet_NaN() : a(0, i, j);  // upper: garbage
    auto w = make_host_tensor<T>(make_shape(n));
    auto info = make_host_tensor<int>(make_shape(1));
    exec::eigh(exec::Serial{}, w.view(), m.view(), info.view());
    EXPECT_EQ(info(0), 0) << "n = " << n;
    auto q3 = make_tensor(m.data(), make_shape(index_t{1}, n, n));
    auto w2 = make_tensor(w.data(), make_shape(index_t{1}, n));
    double const tol = static_cast<double>(n) * (std::is_same_v<T, float> ? 2e-6 : 4e-15);
    EXPECT_LT(eigen_residual(a, q3, w2, 1, n), tol) << "n = " << n;
  }
}

// The eigenvalues of the (batch, n, n) matrices a by Eigen's solver in double, ascending.
template <class A>
std::vector<double> reference_eigenvalues(A const& a, index_t b, index_t n) {
  Eigen::MatrixXd m(n, n);
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) m(i, j) = static_cast<double>(a(b, i, j));
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> solver(m, Eigen::EigenvaluesOnly);
  return {solver.eigenvalues().data(), solver.eigenvalues().data() + n};
}

// Decomposes a copy of the (1, n, n) matrices a, row-major or column-major; returns the residual
// of eigen_residual and checks info and the eigenvalues against Eigen's in double.
template <class T, class A>
double decompose_and_check(A const& a, index_t n, bool row_major, double tol) {
  auto storage = make_host_tensor<T>(make_shape(index_t{1}, n, n));
  assign(storage, a, exec::Serial{});
  auto w = make_host_tensor<T>(make_shape(index_t{1}, n));
  auto info = make_host_tensor<int>(make_shape(index_t{1}));
  auto run = [&](auto const& q) {
    exec::eigh(exec::Serial{}, w.view(), q, info.view());
    EXPECT_EQ(info(0), 0);
    auto const expected = reference_eigenvalues(a, 0, n);
    double const scale = std::max(std::abs(expected.front()), std::abs(expected.back()));
    for (index_t j = 0; j < n; ++j)
      EXPECT_NEAR(static_cast<double>(w(0, j)), expected[static_cast<std::size_t>(j)], tol * scale)
          << "eigenvalue " << j << " of " << n;
    return eigen_residual(a, q, w, 1, n);
  };
  return row_major ? run(storage.view()) : run(permute<0, 2, 1>(storage.view()));
}

// The LAPACK path carries eigenvectors back through the tridiagonal reduction in blocks of 64
// reflectors (kernels/syevd.cpp): one partial block, exactly one, one and one or two more, and
// several with a partial last one, in both storage orders.
TYPED_TEST(Eigh, MatricesSpanningSeveralReflectorBlocks) {
  using T = TypeParam;
  double const eps = std::numeric_limits<T>::epsilon();
  for (index_t const n : {index_t{1}, index_t{2}, index_t{3}, index_t{64}, index_t{65}, index_t{66},
                          index_t{130}, index_t{200}}) {
    auto const a = random_symmetric<T>(1, n, 10 + static_cast<unsigned>(n));
    double const tol = 20.0 * static_cast<double>(n) * eps;
    for (bool const row_major : {true, false})
      EXPECT_LT(decompose_and_check<T>(a, n, row_major, tol), tol)
          << "n = " << n << (row_major ? ", row-major" : ", column-major");
  }
}

// Matrices inside larger buffers (a leading dimension of n + 7) in both storage orders: the
// decomposition reads and writes only the n x n matrix, and its padding keeps its bits.
TYPED_TEST(Eigh, PaddedMatricesInEitherStorageOrder) {
  using T = TypeParam;
  index_t const n = 70, ld = n + 7;
  double const tol = 20.0 * static_cast<double>(n) * std::numeric_limits<T>::epsilon();
  auto const a = random_symmetric<T>(1, n, 6);
  T const pad = static_cast<T>(-12345.5);
  for (bool const row_major : {true, false}) {
    std::vector<T> buffer(static_cast<std::size_t>(n * ld), pad);
    auto const layout = row_major ? make_layout(make_shape(n, n), make_stride(ld, index_t{1}))
                                  : make_layout(make_shape(n, n), make_stride(index_t{1}, ld));
    auto m = make_tensor(buffer.data(), layout);
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < n; ++j) m(i, j) = a(0, i, j);
    auto w = make_host_tensor<T>(make_shape(n));
    auto info = make_host_tensor<int>(make_shape(1));
    exec::eigh(exec::Serial{}, w.view(), m, info.view());
    EXPECT_EQ(info(0), 0);
    auto q3 = make_tensor(
        buffer.data(),
        row_major ? make_layout(make_shape(index_t{1}, n, n), make_stride(n * ld, ld, index_t{1}))
                  : make_layout(make_shape(index_t{1}, n, n), make_stride(n * ld, index_t{1}, ld)));
    auto w2 = make_tensor(w.data(), make_shape(index_t{1}, n));
    EXPECT_LT(eigen_residual(a, q3, w2, 1, n), tol) << (row_major ? "row-major" : "column-major");
    index_t untouched = 0;
    for (index_t line = 0; line < n; ++line)
      for (index_t k = n; k < ld; ++k)
        untouched += buffer[static_cast<std::size_t>(line * ld + k)] == pad ? 1 : 0;
    EXPECT_EQ(untouched, n * (ld - n)) << (row_major ? "row-major" : "column-major");
  }
}

// A reflector that is the identity (tau = 0) wherever a column is already reduced: the zero
// matrix, a diagonal one; and a rank-one update of the identity, whose eigenvalue 1 repeats
// n - 1 times.
TYPED_TEST(Eigh, IdentityReflectorsAndRepeatedEigenvalues) {
  using T = TypeParam;
  index_t const n = 100;
  double const tol = 20.0 * static_cast<double>(n) * std::numeric_limits<T>::epsilon();
  auto zero = make_host_tensor<T>(make_shape(index_t{1}, n, n));
  auto diagonal = make_host_tensor<T>(make_shape(index_t{1}, n, n));
  auto rank_one = make_host_tensor<T>(make_shape(index_t{1}, n, n));
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) {
      zero(0, i, j) = T(0);
      diagonal(0, i, j) = i == j ? static_cast<T>((37 * i) % n) : T(0);  // 0..n-1, shuffled
      double const u_i = 0.1 * static_cast<double>(i % 7), u_j = 0.1 * static_cast<double>(j % 7);
      rank_one(0, i, j) = static_cast<T>((i == j ? 1.0 : 0.0) + u_i * u_j);
    }
  for (bool const row_major : {true, false}) {
    EXPECT_LT(decompose_and_check<T>(zero, n, row_major, tol), tol);
    EXPECT_LT(decompose_and_check<T>(diagonal, n, row_major, tol), tol);
    EXPECT_LT(decompose_and_check<T>(rank_one, n, row_major, tol), tol);
  }
}

// Elements far below or far above the range whose squares LAPACK's reduction can form are
// solved scaled into it and the eigenvalues scaled back, as ?syevd does: the eigenpairs of s A
// are s times A's eigenvalues with A's eigenvectors.
TYPED_TEST(Eigh, TinyAndHugeMatricesAreSolvedScaled) {
  using T = TypeParam;
  index_t const n = 70;
  double const tol = 20.0 * static_cast<double>(n) * std::numeric_limits<T>::epsilon();
  auto const a = random_symmetric<T>(1, n, 5);
  auto const expected = reference_eigenvalues(a, 0, n);
  double const spread = std::max(std::abs(expected.front()), std::abs(expected.back()));
  bool const is_float = std::is_same_v<T, float>;
  for (double const s : {is_float ? 1e-30 : 1e-200, is_float ? 1e30 : 1e200}) {
    auto scaled = make_host_tensor<T>(make_shape(index_t{1}, n, n));
    for (index_t i = 0; i < n; ++i)
      for (index_t j = 0; j < n; ++j) scaled(0, i, j) = static_cast<T>(a(0, i, j) * s);
    auto w = make_host_tensor<T>(make_shape(index_t{1}, n));
    auto info = make_host_tensor<int>(make_shape(index_t{1}));
    exec::eigh(exec::Serial{}, w.view(), scaled.view(), info.view());
    EXPECT_EQ(info(0), 0) << "scale " << s;
    auto unscaled = make_host_tensor<double>(make_shape(index_t{1}, n));
    for (index_t j = 0; j < n; ++j) {
      unscaled(0, j) = static_cast<double>(w(0, j)) / s;
      EXPECT_NEAR(unscaled(0, j), expected[static_cast<std::size_t>(j)], tol * spread)
          << "scale " << s << ", eigenvalue " << j;
    }
    EXPECT_LT(eigen_residual(a, scaled, unscaled, 1, n), tol) << "scale " << s;
  }
}

TEST(Eigh, EveryExecutorGivesTheSameBits) {
  index_t const batch = 7, n = 16;
  auto const a = random_symmetric<double>(batch, n, 3);
  std::vector<std::vector<double>> results;
  auto run = [&](auto const& executor) {
    auto q = make_host_tensor<double>(make_shape(batch, n, n));
    assign(q, a, exec::Serial{});
    auto w = make_host_tensor<double>(make_shape(batch, n));
    auto info = make_host_tensor<int>(make_shape(batch));
    exec::eigh(executor, w.view(), q.view(), info.view());
    results.emplace_back(q.data(), q.data() + batch * n * n);
    results.back().insert(results.back().end(), w.data(), w.data() + batch * n);
  };
  run(exec::Serial{});
  run(exec::OpenMP{.threads = 3});
  run(exec::Auto{.parallel_threshold = 1});
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

TEST(Eigh, AFailedSolveIsReportedForItsMatrixOnly) {
  // A NaN in matrix 1's lower triangle: Eigen's QR iteration cannot converge on it.
  index_t const batch = 3, n = 4;
  auto const a = random_symmetric<double>(batch, n, 4);
  auto q = make_host_tensor<double>(make_shape(batch, n, n));
  assign(q, a, exec::Serial{});
  q(1, 2, 1) = std::numeric_limits<double>::quiet_NaN();
  auto w = make_host_tensor<double>(make_shape(batch, n));
  auto info = make_host_tensor<int>(make_shape(batch));
  exec::eigh(exec::Serial{}, w.view(), q.view(), info.view());
  EXPECT_EQ(info(0), 0);
  EXPECT_GT(info(1), 0);
  EXPECT_EQ(info(2), 0);
  auto ok = [&](index_t b) {
    auto qb = make_tensor(q.data() + b * n * n, make_shape(index_t{1}, n, n));
    auto ab = make_tensor(a.data() + b * n * n, make_shape(index_t{1}, n, n));
    auto wb = make_tensor(w.data() + b * n, make_shape(index_t{1}, n));
    return eigen_residual(ab, qb, wb, 1, n);
  };
  EXPECT_LT(ok(0), 1e-12);
  EXPECT_LT(ok(2), 1e-12);
}

TEST(Eigh, EmptyMatricesSucceed) {
  auto q = make_host_tensor<double>(make_shape(index_t{2}, index_t{0}, index_t{0}));
  auto w = make_host_tensor<double>(make_shape(index_t{2}, index_t{0}));
  auto info = make_host_tensor<int>(make_shape(index_t{2}));
  info(0) = info(1) = 7;
  exec::eigh(exec::Serial{}, w.view(), q.view(), info.view());
  EXPECT_EQ(info(0), 0);
  EXPECT_EQ(info(1), 0);
}

TEST(EighErrors, SentencesNameTheShapes) {
  auto q = make_host_tensor<double>(make_shape(index_t{2}, index_t{3}, index_t{3}));
  auto rect = make_host_tensor<double>(make_shape(index_t{2}, index_t{3}, index_t{4}));
  auto w = make_host_tensor<double>(make_shape(index_t{2}, index_t{3}));
  auto w_short = make_host_tensor<double>(make_shape(index_t{2}, index_t{2}));
  auto info = make_host_tensor<int>(make_shape(index_t{2}));
  auto info_short = make_host_tensor<int>(make_shape(index_t{1}));
  EXPECT_EQ(error_of([&] { exec::eigh(exec::Serial{}, w.view(), rect.view(), info.view()); }),
            "eigh needs square matrices, got (2,3,4).");
  EXPECT_EQ(error_of([&] { exec::eigh(exec::Serial{}, w_short.view(), q.view(), info.view()); }),
            "eigh of matrices (2,3,3) needs eigenvalues (2,3) and info (2), got eigenvalues (2,2) "
            "and info (2).");
  EXPECT_EQ(error_of([&] { exec::eigh(exec::Serial{}, w.view(), q.view(), info_short.view()); }),
            "eigh of matrices (2,3,3) needs eigenvalues (2,3) and info (2), got eigenvalues (2,3) "
            "and info (1).");
  EXPECT_EQ(q(0, 0, 0), 0.0) << "nothing written";
}

// qr_orthogonal_factor (exec/qr.hpp), the QR iteration's other primitive, tested beside eigh.
TEST(QrOrthogonalFactor, GivesAnOrthogonalQWithUpperTriangularQtAInBothStorageOrders) {
  index_t const n = 4;
  std::vector<double> a(2 * n * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = std::sin(1.0 + 3.0 * static_cast<double>(i));
  for (bool row_major : {true, false}) {
    std::vector<double> q = a;
    auto const rows = make_tensor(q.data(), make_layout(make_shape(index_t{2}, n, n)));
    if (row_major)
      exec::qr_orthogonal_factor(exec::Serial{}, rows);
    else
      exec::qr_orthogonal_factor(exec::Serial{}, permute<0, 2, 1>(rows));
    // Element (i, j) of matrix b of a and of q in the storage order used.
    auto at = [&](std::vector<double> const& m, index_t b, index_t i, index_t j) {
      return row_major ? m[static_cast<std::size_t>(b * n * n + i * n + j)]
                       : m[static_cast<std::size_t>(b * n * n + j * n + i)];
    };
    for (index_t b = 0; b < 2; ++b)
      for (index_t i = 0; i < n; ++i)
        for (index_t j = 0; j < n; ++j) {
          double qtq = 0.0, qta = 0.0;
          for (index_t k = 0; k < n; ++k) {
            qtq += at(q, b, k, i) * at(q, b, k, j);
            qta += at(q, b, k, i) * at(a, b, k, j);
          }
          EXPECT_NEAR(qtq, i == j ? 1.0 : 0.0, 1e-14) << row_major << " " << b;
          if (i > j) {
            EXPECT_NEAR(qta, 0.0, 1e-14) << row_major << " " << b;
          }
        }
  }
  // LAPACK's sign convention: the first reflector maps (3, 4) onto -5 e_1, so Q's first column is
  // (3, 4) / -5.
  std::vector<double> m = {3.0, 1.0, 4.0, 2.0};  // row-major [[3, 1], [4, 2]]
  exec::qr_orthogonal_factor(
      exec::Serial{}, make_tensor(m.data(), make_layout(make_shape(index_t{2}, index_t{2}))));
  EXPECT_NEAR(m[0], -0.6, 1e-15);
  EXPECT_NEAR(m[2], -0.8, 1e-15);
  auto rect = make_host_tensor<double>(make_shape(index_t{2}, index_t{3}, index_t{4}));
  EXPECT_EQ(error_of([&] { exec::qr_orthogonal_factor(exec::Serial{}, rect.view()); }),
            "qr_orthogonal_factor needs square matrices, got (2,3,4).");
}

}  // namespace
