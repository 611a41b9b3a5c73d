// The Eigen kernels behind the host dense primitives, one matrix (or one tile) per call: a product
// tile and a rank-k update (exec/dense.hpp, where no BLAS computes them), a symmetric
// eigendecomposition (exec/eigh.hpp, where LAPACK does not) and a QR orthogonal factor
// (exec/qr.hpp). Eigen's templates are most of a dense call's compile time (about 30 s of -O2 for
// a Shampoo program's float and double products and eigensolvers, docs/benchmarks.md), so with
// TESSEL_BLAS they are compiled once, for float and double, in the tessel::blas library
// (kernels/eigen_kernels.cpp) that such a build links anyway, and declared extern here; a header-only
// build without it compiles them where they are used.
#pragma once

#include <type_traits>

#include "../../core/config.hpp"

TESSEL_BEGIN_EIGEN_INCLUDE
#include <Eigen/Core>
#include <Eigen/Eigenvalues>
#include <Eigen/QR>
TESSEL_END_EIGEN_INCLUDE

#include "blas.hpp"
#include "eigh_operands.hpp"
#include "operands.hpp"
#include "transposed_pairs.hpp"

namespace tessel::exec::detail {

template <class T, bool RowMajor>
using EigenMatrixMap = Eigen::Map<
    std::conditional_t<std::is_const_v<T>,
                       Eigen::Matrix<std::remove_const_t<T>, Eigen::Dynamic, Eigen::Dynamic,
                                     RowMajor ? Eigen::RowMajor : Eigen::ColMajor> const,
                       Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic,
                                     RowMajor ? Eigen::RowMajor : Eigen::ColMajor>>,
    Eigen::Unaligned, Eigen::OuterStride<>>;

// Matrix b of m as an Eigen map of its own storage order.
template <bool RowMajor, class T>
EigenMatrixMap<T, RowMajor> eigen_map(MatrixBatch<T> const& m, index_t b) {
  return EigenMatrixMap<T, RowMajor>(m.data + b * m.batch_stride, m.rows, m.cols,
                                     Eigen::OuterStride<>(m.leading()));
}

// Rows [i0, i0 + h) and columns [j0, j0 + w) of matrix `mat` of C = alpha A B + beta C (beta == 0:
// C is not read), A and B in the storage orders ARow and BRow, C row-major.
template <class T, bool ARow, bool BRow>
void eigen_gemm_tile(MatrixBatch<T> const& c, MatrixBatch<T const> const& a,
                     MatrixBatch<T const> const& b, index_t mat, index_t i0, index_t j0, index_t h,
                     index_t w, T alpha, T beta) {
  auto cm = eigen_map<true>(c, mat);
  auto am = eigen_map<ARow>(a, a.batch == 1 ? 0 : mat);
  auto bm = eigen_map<BRow>(b, b.batch == 1 ? 0 : mat);
  auto out = cm.block(i0, j0, h, w);
  if (a.cols == 0) {
    if (beta == T(0))
      out.setZero();
    else
      out *= beta;
  } else if (beta == T(0)) {
    out.noalias() = alpha * (am.middleRows(i0, h) * bm.middleCols(j0, w));
  } else {
    if (beta != T(1)) out *= beta;
    out.noalias() += alpha * (am.middleRows(i0, h) * bm.middleCols(j0, w));
  }
}

// The lower triangle of matrix `mat` of C = alpha A A^T + beta C, A in storage order ARow.
template <class T, bool ARow>
void eigen_syrk_lower(MatrixBatch<T> const& c, MatrixBatch<T const> const& a, index_t mat, T alpha,
                      T beta) {
  auto cm = eigen_map<true>(c, mat);
  if (beta == T(0))
    cm.setZero();
  else if (beta != T(1))
    cm *= beta;
  if (a.cols > 0)
    cm.template selfadjointView<Eigen::Lower>().rankUpdate(
        eigen_map<ARow>(a, a.batch == 1 ? 0 : mat), alpha);
}

// Matrix b of m: eigenvectors written back, eigenvalues into w, the solver's verdict returned.
template <class T, bool RowMajor>
int host_eigh_one(MatrixBatch<T> const& m, EigenvalueBatch<T> const& w, index_t b) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  auto a = eigen_map<RowMajor>(m, b);
  // Eigen reads the lower triangle of the matrix it is given, whatever its storage order.
  Eigen::SelfAdjointEigenSolver<Matrix> solver(Matrix(a), Eigen::ComputeEigenvectors);
  if (solver.info() != Eigen::Success) return 1;
  a = solver.eigenvectors();
  for (index_t i = 0; i < m.rows; ++i) w.at(b, i) = solver.eigenvalues()(i);
  return 0;
}

// Matrix b of m overwritten with Q of its Householder QR factorization.
template <class T, bool RowMajor>
void host_qr_one(MatrixBatch<T> const& m, index_t b) {
  using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
  auto a = eigen_map<RowMajor>(m, b);
  Eigen::HouseholderQR<Matrix> qr(a);
  a = qr.householderQ();
}

}  // namespace tessel::exec::detail

// The instantiations the tessel::blas library compiles (kernels/eigen_kernels.cpp): declared extern
// with TESSEL_BLAS.
#define TESSEL_EIGEN_KERNELS(extern_, T)                                                           \
  namespace tessel::exec::detail {                                                                 \
  extern_ template void eigen_gemm_tile<T, true, true>(MatrixBatch<T> const&,                      \
                                                       MatrixBatch<T const> const&,                \
                                                       MatrixBatch<T const> const&, index_t,       \
                                                       index_t, index_t, index_t, index_t, T, T);  \
  extern_ template void eigen_gemm_tile<T, true, false>(MatrixBatch<T> const&,                     \
                                                        MatrixBatch<T const> const&,               \
                                                        MatrixBatch<T const> const&, index_t,      \
                                                        index_t, index_t, index_t, index_t, T, T); \
  extern_ template void eigen_gemm_tile<T, false, true>(MatrixBatch<T> const&,                     \
                                                        MatrixBatch<T const> const&,               \
                                                        MatrixBatch<T const> const&, index_t,      \
                                                        index_t, index_t, index_t, index_t, T, T); \
  extern_ template void eigen_gemm_tile<T, false, false>(MatrixBatch<T> const&,                    \
                                                         MatrixBatch<T const> const&,              \
                                                         MatrixBatch<T const> const&, index_t,     \
                                                         index_t, index_t, index_t, index_t, T,    \
                                                         T);                                       \
  extern_ template void eigen_syrk_lower<T, true>(MatrixBatch<T> const&,                           \
                                                  MatrixBatch<T const> const&, index_t, T, T);     \
  extern_ template void eigen_syrk_lower<T, false>(MatrixBatch<T> const&,                          \
                                                   MatrixBatch<T const> const&, index_t, T, T);    \
  extern_ template int host_eigh_one<T, true>(MatrixBatch<T> const&, EigenvalueBatch<T> const&,    \
                                              index_t);                                            \
  extern_ template int host_eigh_one<T, false>(MatrixBatch<T> const&, EigenvalueBatch<T> const&,   \
                                               index_t);                                           \
  extern_ template void host_qr_one<T, true>(MatrixBatch<T> const&, index_t);                      \
  extern_ template void host_qr_one<T, false>(MatrixBatch<T> const&, index_t);                     \
  }
#if TESSEL_BLAS
TESSEL_EIGEN_KERNELS(extern, float)
TESSEL_EIGEN_KERNELS(extern, double)
#endif
