// Views shared by the batched inverse-root methods (eigen.hpp, coupled_newton.hpp): a batch of
// d x d matrices stored back to back, its diagonals, and one value per matrix broadcast over its
// rows, columns or elements; plus the per-matrix "has NaN or Inf" test as a reduction.
#pragma once

#include "../../core/layout.hpp"
#include "../../exec/host.hpp"
#include "../../exec/memory.hpp"
#include "../../expr/arithmetic.hpp"
#include "../../expr/reduce.hpp"

namespace tessel::shampoo::detail {

// (count, d, d) compact row-major.
inline auto matrices_layout(index_t count, index_t d) {
  return make_layout(make_shape(count, d, d));
}
// The same elements as (count, d * d): one row per matrix, for per-matrix reductions.
inline auto matrix_rows_layout(index_t count, index_t d) {
  return make_layout(make_shape(count, d * d));
}
// The diagonals of a (count, d, d) batch: (count, d) : (d * d, d + 1).
inline auto diagonal_layout(index_t count, index_t d) {
  return make_layout(make_shape(count, d), make_stride(d * d, d + 1));
}
// A (count) vector seen as (count, d, d), each value repeated over its matrix.
inline auto per_matrix_layout(index_t count, index_t d) {
  return make_layout(make_shape(count, d, d), make_stride(index_t{1}, Int<0>{}, Int<0>{}));
}
// A (count) vector seen as (count, d), each value repeated over its row.
inline auto per_row_layout(index_t count, index_t d) {
  return make_layout(make_shape(count, d), make_stride(index_t{1}, Int<0>{}));
}
// A (count, d) batch of vectors seen as (count, d, d), vector b repeated over the rows of matrix b
// (element (b, i, j) is v(b, j)).
inline auto per_column_layout(index_t count, index_t d) {
  return make_layout(make_shape(count, d, d), make_stride(d, Int<0>{}, Int<1>{}));
}

// out(b) = sum over matrix b of x * 0: NaN exactly when matrix b holds a NaN or an Inf (0
// otherwise). One reduction pass, packet-friendly on the host; the caller reads the values after
// the executor's wait.
template <class X, class Rows, class Out>
void non_finite_flags(X const& x, Rows const& rows, Out const& out) {
  using T = typename Rows::value_type;
  assign(out, sum(rows * T(0), mode<1>), x);
}

}  // namespace tessel::shampoo::detail
