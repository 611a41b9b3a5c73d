// The symmetric eigendecomposition behind the host executors: eigh(executor, eigenvalues,
// matrices, info) over one matrix or a batch of them (Shampoo's inverse roots, one call per batch
// group and mode). Each matrix is overwritten with its eigenvectors, the eigenvalues come out in
// ascending order, and info says per matrix whether the solver converged, so a caller can retry
// or keep an old result (a failure is data, not an exception). The host runs ?syevd's divide and
// conquer (OpenBLAS's LAPACK, with tessel's blocked back-transformation; exec/dense/blas.hpp) on
// each matrix when tessel is configured with it, Eigen's SelfAdjointEigenSolver otherwise, the
// matrices spread over the executor's threads; the CUDA twin is exec/cuda/eigh.cuh
// (cusolverDnXsyevBatched).
#pragma once

#include <type_traits>
#include <utility>
#include <vector>

#include "../core/config.hpp"

#include "dense.hpp"
#include "dense/eigen_kernels.hpp"
#include "dense/eigh_operands.hpp"
#include "executors.hpp"

namespace tessel::exec {

namespace detail {

#if TESSEL_BLAS
// The same with the LAPACK solver on the matrix in place (exec/dense/blas.hpp), in either
// storage order; work, iwork and values are the calling thread's workspace.
template <class T>
int host_eigh_lapack(MatrixBatch<T> const& m, EigenvalueBatch<T> const& w, index_t b,
                     std::vector<T>& work, std::vector<int>& iwork, std::vector<T>& values) {
  index_t const n = m.rows;
  values.resize(static_cast<std::size_t>(n));
  int const info = blas_syevd(m.row_major(), n, m.data + b * m.batch_stride, m.leading(),
                              values.data(), work, iwork);
  if (info != 0) return info > 0 ? info : 1;
  for (index_t i = 0; i < n; ++i) w.at(b, i) = values[static_cast<std::size_t>(i)];
  return 0;
}
#endif

}  // namespace detail

// Eigendecomposition of symmetric matrices: A = Q diag(lambda) Q^T for each matrix of `matrices`
// (a rank-2 (n, n) tensor or a rank-3 (batch, n, n) batch, row- or column-major like gemm's
// operands). Only the lower triangle of each matrix is read.
// @post matrices(b, i, j) is component i of eigenvector j (unit norm); eigenvalues(b, j) is its
//       eigenvalue, ascending in j; info(b) == 0. When the solver does not converge on matrix b,
//       info(b) > 0 and matrix b and its eigenvalues are unspecified; the other matrices are
//       unaffected.
// eigenvalues is (n) or (batch, n) and info (1) or (batch), any strides; float or double matrices
// and eigenvalues of one type, int info. tessel::Error, with nothing written, when the shapes do
// not fit (eigh_operands.hpp has the sentences).
template <HostExecutor X, TensorType W, TensorType M, TensorType I>
void eigh(X const& executor, W const& eigenvalues, M const& matrices, I const& info) {
  using T = typename M::value_type;
  static_assert(detail::host_dense_type_v<T> && std::is_same_v<typename W::value_type, T>,
                "tessel: the host eigh takes float or double matrices and eigenvalues of the same "
                "type.");
  static_assert(std::is_same_v<typename I::value_type, int>,
                "tessel: eigh's info is an int tensor.");
  static_assert(
      std::is_same_v<typename M::space, HostSpace> &&
          std::is_same_v<typename W::space, HostSpace> &&
          std::is_same_v<typename I::space, HostSpace>,
      "tessel: a host executor decomposes host tensors; use exec::Cuda for device tensors "
      "(<tessel/exec/cuda/eigh.cuh>).");
  auto const ops = detail::eigh_operands(eigenvalues, matrices, info);
  index_t const n = ops.matrices.rows;
  index_t const work = ops.matrices.batch * n * n * n;
  [[maybe_unused]] bool const lapack =
      detail::host_blas_v<T> && detail::fits_blas_syevd(n, ops.matrices.leading());
  auto run = [&](index_t begin, index_t end) {
#if TESSEL_BLAS
    if (lapack) {
      std::vector<T> work, values;
      std::vector<int> iwork;
      for (index_t b = begin; b < end; ++b)
        ops.info.at(b) =
            detail::host_eigh_lapack(ops.matrices, ops.eigenvalues, b, work, iwork, values);
      return;
    }
#endif
    for (index_t b = begin; b < end; ++b)
      ops.info.at(b) = ops.matrices.row_major()
                           ? detail::host_eigh_one<T, true>(ops.matrices, ops.eigenvalues, b)
                           : detail::host_eigh_one<T, false>(ops.matrices, ops.eigenvalues, b);
  };
  if (n == 0) {
    for (index_t b = 0; b < ops.matrices.batch; ++b) ops.info.at(b) = 0;
    return;
  }
  int const threads = detail::threads_for(executor, work);
  if (threads <= 1 || ops.matrices.batch == 1) {
    detail::SerialEigen serial;
    run(0, ops.matrices.batch);
  } else {
    detail::parallel_ranges(threads, ops.matrices.batch, [&](index_t begin, index_t end) {
      detail::SerialEigen serial;
      run(begin, end);
    });
  }
}

}  // namespace tessel::exec
