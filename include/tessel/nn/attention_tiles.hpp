// The tile arithmetic of the attention bodies, over one lane's rows of a tile: products of two
// row-major matrices (C = alpha A B^T + beta C, C += A B) and the exponential of a tile shifted by
// a value per row or per column. On the host they are tessel's primitives — exec::gemm (the BLAS,
// or Eigen) and an assignment of exp(x - shift) through the host executor's packets — called with
// exec::Serial from inside the work item; in device code, loops over the lane's rows.
//
// Why the BLAS on the host: at GPT-2's tiles (64 x 64 x 64, f32) exec::gemm runs 99 GFLOP/s on
// one core of the development machine and loops of row dot products 31 (the BLAS picks AVX-512
// when the program runs; tessel's own loops get the build's SSE2), measured with the products
// alone; forward + backward at B 4, T 256, 12 heads went from 117 ms to 39.5 ms of CPU
// (docs/design.md, "Attention: tile products through the BLAS").
#pragma once

#include "../core/config.hpp"
#include "../core/int.hpp"
#include "../core/layout.hpp"
#include "../exec/dense.hpp"
#include "../exec/host.hpp"
#include "../expr/arithmetic.hpp"
#include "../expr/math.hpp"
#include "../tensor/tensor.hpp"
#include "../tensor/views.hpp"
#include "attention_rows.hpp"

namespace tessel::nn::detail {

// A (rows, cols) view of row-major memory whose rows are ld apart.
template <class C, Integer Rows, Integer Cols, Integer Ld>
auto matrix_view(C* data, Rows rows, Cols cols, Ld ld) {
  return make_tensor(data, make_layout(make_shape(rows, cols), make_stride(ld, Int<1>{})));
}

// c (m, n) = alpha a (m, k) b^T + beta c, with b (n, k); rows ld* apart, elements contiguous.
// beta == 0 ignores c's old values.
template <class C, Integer M, Integer N, Integer K, Integer Lda, Integer Ldb, Integer Ldc>
TESSEL_HOST_DEVICE void product_abt(M m, N n, K k, C alpha, C const* a, Lda lda, C const* b,
                                    Ldb ldb, C beta, C* c, Ldc ldc) {
#if TESSEL_DEVICE_PASS
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      C const ab = alpha * row_dot(a + i * lda, b + j * ldb, k);
      c[i * ldc + j] = beta == C(0) ? ab : ab + beta * c[i * ldc + j];
    }
#else
  exec::gemm(exec::Serial{}, matrix_view(c, m, n, ldc), matrix_view(a, m, k, lda),
             transpose(matrix_view(b, n, k, ldb)), exec::DenseScale{alpha, beta});
#endif
}

// c (m, n) += a (m, k) b, with b (k, n).
template <class C, Integer M, Integer N, Integer K, Integer Lda, Integer Ldb, Integer Ldc>
TESSEL_HOST_DEVICE void product_add_ab(M m, N n, K k, C const* a, Lda lda, C const* b, Ldb ldb,
                                       C* c, Ldc ldc) {
#if TESSEL_DEVICE_PASS
  for (index_t i = 0; i < m; ++i)
    for (index_t l = 0; l < k; ++l) row_axpy(c + i * ldc, a[i * lda + l], b + l * ldb, n);
#else
  exec::gemm(exec::Serial{}, matrix_view(c, m, n, ldc), matrix_view(a, m, k, lda),
             matrix_view(b, k, n, ldb), exec::DenseScale{1.0, 1.0});
#endif
}

// x[r, j] = exp(x[r, j] - shift[r * shift_row + j * shift_col]) over (rows, cols) at row stride
// ld: the shift is one value per row (shift_col 0) or per column (shift_row 0). -inf becomes 0,
// which is how masked scores drop out.
template <class C, Integer Ld, Integer SR, Integer SC>
TESSEL_HOST_DEVICE void exp_shifted(C* x, index_t rows, index_t cols, Ld ld, C const* shift,
                                    SR shift_row, SC shift_col) {
#if TESSEL_DEVICE_PASS
  for (index_t r = 0; r < rows; ++r)
    for (index_t j = 0; j < cols; ++j)
      x[r * ld + j] = math::exp(x[r * ld + j] - shift[r * shift_row + j * shift_col]);
#else
  auto const t = matrix_view(x, rows, cols, ld);
  auto const s =
      make_tensor(shift, make_layout(make_shape(rows, cols), make_stride(shift_row, shift_col)));
  assign(t, exp(t - s), exec::Serial{});
#endif
}

// x[j] = exp(x[j] - m) over a row of n > 0 scores, m = max_j x[j]; returns m and sum_j x[j]
// (exec::ShiftedExp). The host's is exec::exp_shifted_in_place (its packets, or the CPU's widest
// vectors for float). @pre m is finite (a row with at least one unmasked score)
template <class C>
TESSEL_HOST_DEVICE exec::ShiftedExp<C> exp_shifted_row(C* x, index_t n) {
#if TESSEL_DEVICE_PASS
  C m = x[0];
  for (index_t j = 1; j < n; ++j) m = math::max(m, x[j]);
  C sum = 0;
  for (index_t j = 0; j < n; ++j) sum += (x[j] = math::exp(x[j] - m));
  return {m, sum};
#else
  return exec::exp_shifted_in_place(x, n);
#endif
}

}  // namespace tessel::nn::detail
