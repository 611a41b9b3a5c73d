// The three GEMMs of an FLCE chunk as column-major (BLAS / cuBLAS) calls on row-major tensors.
// A row-major (r, c) matrix with row stride ld is, to BLAS, the column-major (c, r) matrix with
// leading dimension ld: its transpose. So each row-major product P = A B is issued as
// P^T = B^T A^T. Kept apart from the CUDA code so the mapping is host-tested
// (tests/flce/gemm_calls_test.cpp runs these calls through a naive column-major GEMM).
#pragma once

#include "../core/config.hpp"

namespace tessel::flce {

// C (m, n) = alpha op(A) op(B) + beta C, column-major, with op(X) = X or X^T.
struct GemmCall {
  bool transpose_a = false;
  bool transpose_b = false;
  index_t m = 0, n = 0, k = 0;
  index_t lda = 0, ldb = 0, ldc = 0;
  double beta = 0;  // alpha is always 1
};

// logits (rows, V) = x_chunk (rows, H) @ weight^T, with weight (V, H).
// A = weight, B = x_chunk, C = logits.
constexpr GemmCall logits_gemm(index_t rows, index_t hidden, index_t vocab, index_t ld_weight,
                               index_t ld_input, index_t ld_logits) {
  return {true, false, vocab, rows, hidden, ld_weight, ld_input, ld_logits, 0.0};
}

// grad_weight (V, H) (+)= g^T (V, rows) @ x_chunk (rows, H).
// A = x_chunk, B = g, C = grad_weight.
constexpr GemmCall grad_weight_gemm(index_t rows, index_t hidden, index_t vocab, index_t ld_input,
                                    index_t ld_grad, index_t ld_grad_weight, bool accumulate) {
  return {
      false, true, hidden, vocab, rows, ld_input, ld_grad, ld_grad_weight, accumulate ? 1.0 : 0.0};
}

// grad_input (rows, H) = g (rows, V) @ weight (V, H).
// A = weight, B = g, C = grad_input.
constexpr GemmCall grad_input_gemm(index_t rows, index_t hidden, index_t vocab, index_t ld_weight,
                                   index_t ld_grad, index_t ld_grad_input) {
  return {false, false, hidden, rows, vocab, ld_weight, ld_grad, ld_grad_input, 0.0};
}

}  // namespace tessel::flce
