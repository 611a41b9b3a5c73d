// The orthogonal factor of a QR factorization behind the host executors:
// qr_orthogonal_factor(executor, matrices) over one square matrix or a batch of them (Shampoo's
// QR iteration, roots/qr_iteration.hpp, one call per batch group and mode). Each matrix A is
// overwritten with Q of A = Q R by Householder reflections with LAPACK's sign convention (?geqrf /
// ?orgqr: a reflector maps its column onto -sign(a_kk) ||x|| e_k), which is what Eigen's
// HouseholderQR computes, so Q matches torch.linalg.qr's to rounding. The host runs Eigen on each
// matrix, the matrices spread over the executor's threads (LAPACK's ?geqrf/?orgqr, which eigh's
// ?syevd path would suggest, are not wired yet: not measured to matter at Shampoo's block sizes);
// the CUDA twin is exec/cuda/qr.cuh (cusolverDn ?geqrf + ?orgqr).
#pragma once

#include <type_traits>

#include "../core/config.hpp"

#include "dense.hpp"
#include "dense/eigen_kernels.hpp"
#include "executors.hpp"

namespace tessel::exec {

namespace detail {

// "square matrices" sentence shared by the host and device primitives.
template <class T>
void check_qr_square(MatrixBatch<T> const& m, bool batched) {
  if (m.rows != m.cols)
    throw_error(sentence("qr_orthogonal_factor needs square matrices, got ",
                         matrix_text(m.batch, m.rows, m.cols, batched), "."));
}

}  // namespace detail

// Q of A = Q R (Householder) for each matrix of `matrices`, a rank-2 (n, n) tensor or a rank-3
// (batch, n, n) batch, row- or column-major like gemm's operands; float or double.
// @post matrices(b) is orthogonal and matrices(b)^T A_b is upper triangular (R_b), with R_b's
//       diagonal signs those of LAPACK's ?geqrf. tessel::Error, with nothing written, when the
//       matrices are not square.
template <HostExecutor X, TensorType M>
void qr_orthogonal_factor(X const& executor, M const& matrices) {
  using T = typename M::value_type;
  static_assert(detail::host_dense_type_v<T>,
                "tessel: the host qr_orthogonal_factor takes float or double matrices.");
  static_assert(std::is_same_v<typename M::space, HostSpace>,
                "tessel: a host executor factors host tensors; use exec::Cuda for device tensors "
                "(<tessel/exec/cuda/qr.cuh>).");
  auto const m = detail::matrix_batch(matrices, "the matrices");
  detail::check_qr_square(m, tuple_size_v<std::remove_cvref_t<decltype(matrices.shape())>> == 3);
  index_t const n = m.rows;
  if (n == 0 || m.batch == 0) return;
  auto run = [&](index_t begin, index_t end) {
    detail::SerialEigen serial;
    for (index_t b = begin; b < end; ++b) {
      if (m.row_major())
        detail::host_qr_one<T, true>(m, b);
      else
        detail::host_qr_one<T, false>(m, b);
    }
  };
  int const threads = detail::threads_for(executor, m.batch * n * n * n);
  if (threads <= 1 || m.batch == 1)
    run(0, m.batch);
  else
    detail::parallel_ranges(threads, m.batch, run);
}

}  // namespace tessel::exec
