// Dense linear algebra behind the host executors: gemm (C = alpha A B + beta C) and syrk
// (C = alpha A A^T + beta C) over one matrix or a batch of matrices, the one primitive the
// workloads call for their products (FLCE's three GEMMs per chunk, Shampoo's factor updates and
// preconditioning). Operands are tessel tensors (exec/dense/operands.hpp says which); transposes
// are views (tessel::transpose). The host runs the BLAS's (or Eigen's) kernels single-threaded
// per tile and spreads the tiles over the executor's threads: a gemm is cut along its longer
// output mode by its own shape, every matrix of a batch alike (a batch's count changes with the
// number of ranks of DistributedShampoo, so it does not choose the tiles); a syrk is one tile per
// matrix. The CUDA twin is exec/cuda/dense.hpp (cuBLAS, strided-batched).
#pragma once

#include <algorithm>
#include <type_traits>

#include "../core/config.hpp"

#include "dense/blas.hpp"
#include "dense/eigen_kernels.hpp"
#include "dense/operands.hpp"
#include "dense/transposed_pairs.hpp"
#include "executors.hpp"

namespace tessel::exec {

namespace detail {

// Output rows (or columns) per tile of a host product cut along a mode of `span`. The tiling
// depends on the shapes only, never on the thread count, so every element is computed in the same
// tile by the same kernel whatever the executor: the same bits for every thread count (a BLAS,
// like Eigen, may round a tile's edge differently from its inside, so tiles that moved with the
// thread count would not give that). Each tile packs the operand all tiles share again, one copy
// per 2 * width flops, so tiles are 256 wide, and up to 1024 where the span is long enough to
// still give 16 of them: FLCE's (chunk, vocabulary) logits and (vocabulary, hidden) grad_weight,
// where 1024-wide tiles made the call 6-14% faster at H 512 and 0-5% at H 2048
// (docs/benchmarks.md).
constexpr index_t dense_tile_span(index_t span) {
  return std::clamp<index_t>(span / 16, 256, 1024);
}

// Keeps Eigen's own OpenMP parallelization off while a host dense call runs on one thread (Eigen
// otherwise starts a team of omp_get_max_threads() for a large product). omp_set_num_threads sets
// the calling task's ICV only, so other threads are unaffected. Every task of a team holds one
// too: Eigen sizes its GEMM blocks by nbThreads() (omp_get_max_threads()), so without it a tile
// computed inside a team is blocked, and rounded, differently from the same tile computed alone.
class SerialEigen {
 public:
  SerialEigen() {
#if defined(_OPENMP)
    saved_ = omp_get_max_threads();
    omp_set_num_threads(1);
#endif
  }
  ~SerialEigen() {
#if defined(_OPENMP)
    omp_set_num_threads(saved_);
#endif
  }
  SerialEigen(SerialEigen const&) = delete;
  SerialEigen& operator=(SerialEigen const&) = delete;

 private:
  [[maybe_unused]] int saved_ = 1;
};

// f(a_row_major, b_row_major) with both storage orders as compile-time constants.
template <class F>
void with_orders(bool a_row, bool b_row, F const& f) {
  if (a_row) {
    if (b_row)
      f(std::true_type{}, std::true_type{});
    else
      f(std::true_type{}, std::false_type{});
  } else {
    if (b_row)
      f(std::false_type{}, std::true_type{});
    else
      f(std::false_type{}, std::false_type{});
  }
}

// C = alpha A B + beta C, C row-major. @pre check_gemm passed
template <class T>
void host_gemm(int threads, MatrixBatch<T> const& c, MatrixBatch<T const> const& a,
               MatrixBatch<T const> const& b, DenseScale s) {
  index_t const batch = c.batch, m = c.rows, n = c.cols, k = a.cols;
  if (batch == 0 || m == 0 || n == 0) return;
  bool const by_cols = n >= m;
  index_t const span = by_cols ? n : m;
  index_t const tile = dense_tile_span(span);
  index_t const tiles = std::max<index_t>(1, span / tile);  // the last one is wider
  T const alpha = static_cast<T>(s.alpha), beta = static_cast<T>(s.beta);
  bool const blas =
      host_blas_v<T> && fits_blas_int(std::max({m, n, k, c.leading(), a.leading(), b.leading()}));
  with_orders(a.row_major(), b.row_major(), [&](auto a_row, auto b_row) {
    auto run = [&](index_t begin, index_t end) {
      for (index_t task = begin; task < end; ++task) {
        index_t const mat = task / tiles;
        index_t const first = task % tiles * tile;
        index_t const count = task % tiles + 1 < tiles ? tile : span - first;
        index_t const i0 = by_cols ? 0 : first, h = by_cols ? m : count;
        index_t const j0 = by_cols ? first : 0, w = by_cols ? count : n;
        if (blas && k > 0) {
#if TESSEL_BLAS
          // The tile's first row of A and first column of B, whatever their storage order.
          T const* const a0 =
              a.data + (a.batch == 1 ? 0 : mat) * a.batch_stride + i0 * a.row_stride;
          T const* const b0 =
              b.data + (b.batch == 1 ? 0 : mat) * b.batch_stride + j0 * b.col_stride;
          blas_gemm(!a.row_major(), !b.row_major(), h, w, k, alpha, a0, a.leading(), b0,
                    b.leading(), beta, c.data + mat * c.batch_stride + i0 * c.row_stride + j0,
                    c.row_stride);
#endif
        } else {
          eigen_gemm_tile<T, decltype(a_row)::value, decltype(b_row)::value>(c, a, b, mat, i0, j0,
                                                                             h, w, alpha, beta);
        }
      }
    };
    if (threads <= 1) {
      SerialEigen serial;
      run(0, batch * tiles);
    } else {
      parallel_ranges(threads, batch * tiles, [&](index_t begin, index_t end) {
        SerialEigen serial;
        run(begin, end);
      });
    }
  });
}

// C = alpha A A^T + beta C, C row-major, both triangles written. @pre check_syrk passed
template <class T>
void host_syrk(int threads, MatrixBatch<T> const& c, MatrixBatch<T const> const& a, DenseScale s) {
  index_t const batch = c.batch, n = c.rows;
  if (batch == 0 || n == 0) return;
  T const alpha = static_cast<T>(s.alpha), beta = static_cast<T>(s.beta);
  bool const blas =
      host_blas_v<T> && fits_blas_int(std::max({n, a.cols, c.leading(), a.leading()}));
  auto one = [&](index_t mat, auto a_row) {
    T* const cm = c.data + mat * c.batch_stride;
    if (blas && a.cols > 0) {
#if TESSEL_BLAS
      blas_syrk_lower(!a.row_major(), n, a.cols, alpha,
                      a.data + (a.batch == 1 ? 0 : mat) * a.batch_stride, a.leading(), beta, cm,
                      c.row_stride);
#endif
    } else {
      eigen_syrk_lower<T, decltype(a_row)::value>(c, a, mat, alpha, beta);
    }
    mirror_lower_to_upper([&](index_t i, index_t j) -> T& { return cm[i * c.row_stride + j]; }, n);
  };
  auto run = [&](index_t begin, index_t end) {
    for (index_t mat = begin; mat < end; ++mat) {
      if (a.row_major())
        one(mat, std::true_type{});
      else
        one(mat, std::false_type{});
    }
  };
  if (threads <= 1 || batch == 1) {
    SerialEigen serial;
    run(0, batch);
  } else {
    parallel_ranges(threads, batch, [&](index_t begin, index_t end) {
      SerialEigen serial;
      run(begin, end);
    });
  }
}

template <class T>
inline constexpr bool host_dense_type_v = std::is_same_v<T, float> || std::is_same_v<T, double>;

}  // namespace detail

// C = alpha A B + beta C: C (m, n), A (m, k), B (k, n), each a matrix or a batch (batch, rows,
// cols); A or B with a batch of 1 serves every matrix of C's batch. Host tensors of one type,
// float or double. tessel::Error, with nothing written, when the shapes do not fit or an operand
// is neither row- nor column-major.
template <HostExecutor X, TensorType C, TensorType A, TensorType B>
void gemm(X const& executor, C const& c, A const& a, B const& b, DenseScale scale = {}) {
  using T = typename C::value_type;
  static_assert(detail::host_dense_type_v<T> && std::is_same_v<typename A::value_type, T> &&
                    std::is_same_v<typename B::value_type, T>,
                "tessel: the host gemm multiplies float or double matrices of one type; convert "
                "16-bit operands first (tessel::cast).");
  static_assert(std::is_same_v<typename C::space, HostSpace> &&
                    std::is_same_v<typename A::space, HostSpace> &&
                    std::is_same_v<typename B::space, HostSpace>,
                "tessel: a host executor multiplies host tensors; use exec::Cuda for device "
                "tensors (<tessel/exec/cuda/dense.hpp>).");
  auto cm = detail::matrix_batch(c, "C");
  auto am = detail::matrix_batch(a, "A");
  auto bm = detail::matrix_batch(b, "B");
  detail::check_gemm(cm, am, bm);
  auto ac = detail::as_const(am);
  auto bc = detail::as_const(bm);
  if (!cm.row_major()) {  // C^T = B^T A^T, with C^T row-major
    cm = cm.transposed();
    auto const at = ac.transposed();
    ac = bc.transposed();
    bc = at;
  }
  index_t const work = cm.batch * cm.rows * cm.cols * (am.cols > 0 ? am.cols : 1);
  detail::host_gemm(detail::threads_for(executor, work), cm, ac, bc, scale);
}

// C = alpha A A^T + beta C: C (n, n), A (n, k), or batches of them; C comes out symmetric (both
// triangles). Same types and errors as gemm.
template <HostExecutor X, TensorType C, TensorType A>
void syrk(X const& executor, C const& c, A const& a, DenseScale scale = {}) {
  using T = typename C::value_type;
  static_assert(detail::host_dense_type_v<T> && std::is_same_v<typename A::value_type, T>,
                "tessel: the host syrk works on float or double matrices of one type.");
  static_assert(
      std::is_same_v<typename C::space, HostSpace> && std::is_same_v<typename A::space, HostSpace>,
      "tessel: a host executor works on host tensors; use exec::Cuda for device "
      "tensors (<tessel/exec/cuda/dense.hpp>).");
  auto cm = detail::matrix_batch(c, "C");
  auto am = detail::matrix_batch(a, "A");
  detail::check_syrk(cm, am);
  // A A^T is symmetric, so a column-major C is written as its (row-major) transpose.
  if (!cm.row_major()) cm = cm.transposed();
  auto const ac = detail::as_const(am);
  index_t const work = cm.batch * cm.rows * cm.rows * (am.cols > 0 ? am.cols : 1);
  detail::host_syrk(detail::threads_for(executor, work), cm, ac, scale);
}

}  // namespace tessel::exec
