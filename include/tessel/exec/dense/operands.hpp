// The operands of the dense primitives (exec/dense.hpp on the host, exec/cuda/dense.hpp on the
// device), read off tessel tensors and checked once for both: a batch of matrices is a rank-2
// tensor (one matrix) or a rank-3 tensor (batch, rows, cols) with unit stride along one of its two
// matrix modes (row-major, or a transposed view: column-major), and any batch stride (0 repeats
// one matrix over the batch). BLAS-style calls are then made on these plain descriptors.
#pragma once

#include <array>
#include <cstddef>
#include <type_traits>

#include "../../core/error.hpp"
#include "../../core/int.hpp"
#include "../../core/int_tuple.hpp"
#include "../../tensor/tensor.hpp"

namespace tessel::exec {

// The scalars of C = alpha op + beta C. beta == 0 means C is not read (it may hold NaN).
struct DenseScale {
  double alpha = 1.0;
  double beta = 0.0;
};

namespace detail {

using tessel::detail::sentence;
using tessel::detail::throw_error;

// A batch of matrices: element (b, i, j) at data[b * batch_stride + i * row_stride +
// j * col_stride]. Extent-1 modes get the stride BLAS expects (see normalized()).
template <class T>
struct MatrixBatch {
  T* data = nullptr;
  index_t batch = 1, rows = 0, cols = 0;
  index_t batch_stride = 0, row_stride = 0, col_stride = 0;

  // Unit stride along the columns: each row is contiguous.
  constexpr bool row_major() const { return col_stride == 1; }
  // The same elements seen as the transposed matrices (a free relabeling). A (k, 1) matrix with
  // unit strides turns into a row-major (1, k) one whose row stride, 1, addresses nothing but is
  // BLAS's "ld", which must be at least k: cuBLAS refuses it (an illegal lda), so it is raised.
  constexpr MatrixBatch transposed() const {
    MatrixBatch t{data, batch, cols, rows, batch_stride, col_stride, row_stride};
    if (t.rows == 1 && t.row_major() && t.row_stride < t.cols) t.row_stride = t.cols;
    return t;
  }
  // The distance between consecutive rows (row-major) or columns (column-major): BLAS's "ld".
  constexpr index_t leading() const { return row_major() ? row_stride : col_stride; }
};

// Gives the matrices the strides BLAS accepts, or returns false: unit stride along the columns
// and a row stride >= the column count (row-major), else unit stride along the rows and a column
// stride >= the row count (column-major). An extent-1 mode addresses nothing, so its stride is
// free and chosen here.
template <class T>
constexpr bool normalize(MatrixBatch<T>& m) {
  auto const at_least = [](index_t x) { return x > 1 ? x : index_t{1}; };
  if (m.batch == 1) m.batch_stride = 0;
  if (m.cols == 1 || m.col_stride == 1) {
    index_t const ld = m.rows == 1 ? at_least(m.cols) : m.row_stride;
    if (ld >= at_least(m.cols)) {
      m.col_stride = 1;
      m.row_stride = ld;
      return true;
    }
  }
  if (m.rows == 1 || m.row_stride == 1) {
    index_t const ld = m.cols == 1 ? at_least(m.rows) : m.col_stride;
    if (ld >= at_least(m.rows)) {
      m.row_stride = 1;
      m.col_stride = ld;
      return true;
    }
  }
  return m.batch == 0 || m.rows == 0 || m.cols == 0;
}

// A gemm as a column-major BLAS (cuBLAS) takes it: row-major C (m, n) is column-major C^T
// (n, m) = B^T A^T, so B comes first; a row-major operand is its own transpose in column-major
// terms (no op), a column-major one needs op T. A column-major C is first turned into a row-major
// one (C^T = B^T A^T). The fields are in the library's terms (a is the first operand, B).
template <class TC, class TA>
struct ColumnMajorGemm {
  bool trans_a = false, trans_b = false;
  index_t m = 0, n = 0, k = 0, batch = 0;
  TA* a = nullptr;
  index_t lda = 0, stride_a = 0;
  TA* b = nullptr;
  index_t ldb = 0, stride_b = 0;
  TC* c = nullptr;
  index_t ldc = 0, stride_c = 0;
};

// @pre check_gemm(c, a, b) passed
template <class TC, class TA>
constexpr ColumnMajorGemm<TC, TA> column_major_gemm(MatrixBatch<TC> c, MatrixBatch<TA> a,
                                                    MatrixBatch<TA> b) {
  if (!c.row_major()) {
    c = c.transposed();
    auto const at = a.transposed();
    a = b.transposed();
    b = at;
  }
  return {.trans_a = !b.row_major(),
          .trans_b = !a.row_major(),
          .m = c.cols,
          .n = c.rows,
          .k = a.cols,
          .batch = c.batch,
          .a = b.data,
          .lda = b.leading(),
          .stride_a = b.batch == 1 ? 0 : b.batch_stride,
          .b = a.data,
          .ldb = a.leading(),
          .stride_b = a.batch == 1 ? 0 : a.batch_stride,
          .c = c.data,
          .ldc = c.leading(),
          .stride_c = c.batch_stride};
}

// The same descriptor, read-only.
template <class T>
constexpr MatrixBatch<T const> as_const(MatrixBatch<T> const& m) {
  return {m.data, m.batch, m.rows, m.cols, m.batch_stride, m.row_stride, m.col_stride};
}

// The shape of one matrix, or of the batch, as error sentences write shapes.
inline std::string matrix_text(index_t batch, index_t rows, index_t cols, bool batched) {
  return batched ? tessel::detail::shape_text(std::array<index_t, 3>{batch, rows, cols})
                 : tessel::detail::shape_text(std::array<index_t, 2>{rows, cols});
}

// The descriptor of a rank-2 or rank-3 tensor. `name` names it in error sentences.
template <TensorType X>
auto matrix_batch(X const& t, char const* name) {
  using S = std::remove_cvref_t<decltype(t.shape())>;
  static_assert(Tuple<S> && FlatIntTuple<S>,
                "tessel: the dense primitives take flat tensors of static rank (2: a matrix, 3: a "
                "batch of matrices).");
  constexpr std::size_t r = tuple_size_v<S>;
  static_assert(r == 2 || r == 3,
                "tessel: the dense primitives take rank-2 tensors (a matrix) or rank-3 tensors "
                "(batch, rows, cols).");
  auto const shape = to_array(t.shape());
  auto const stride = to_array(t.stride());
  constexpr std::size_t o = r - 2;
  MatrixBatch<typename X::element_type> m;
  m.data = t.data();
  m.batch = r == 3 ? shape[0] : 1;
  m.batch_stride = r == 3 ? stride[0] : 0;
  m.rows = shape[o];
  m.cols = shape[o + 1];
  m.row_stride = stride[o];
  m.col_stride = stride[o + 1];
  if (!normalize(m))
    throw_error(
        sentence("the dense primitives need a row-major or column-major matrix (unit "
                 "stride along one matrix mode, the other stride at least its extent), "
                 "but ",
                 name, " has shape ", matrix_text(m.batch, m.rows, m.cols, r == 3),
                 " and strides (", r == 3 ? sentence(m.batch_stride, ",") : std::string(),
                 m.row_stride, ",", m.col_stride, "); copy it into a compact tensor."));
  return m;
}

// The batch of a call: every operand has it, or 1 (that matrix then serves the whole batch).
inline index_t common_batch(char const* what, index_t c, index_t a, index_t b) {
  index_t const batch = c;
  auto fits = [&](index_t x) { return x == batch || x == 1; };
  if (!fits(a) || !fits(b))
    throw_error(sentence(what, " needs every operand to have the batch of its result (", batch,
                         ") or a batch of 1, got ", a, " and ", b, "."));
  return batch;
}

// C (m, n) = A (m, k) B (k, n), checked. @post the descriptors agree on m, n, k and the batch
template <class TC, class TA, class TB>
void check_gemm(MatrixBatch<TC> const& c, MatrixBatch<TA> const& a, MatrixBatch<TB> const& b) {
  if (a.cols != b.rows || c.rows != a.rows || c.cols != b.cols)
    throw_error(sentence("gemm cannot multiply A ", matrix_text(a.batch, a.rows, a.cols, false),
                         " by B ", matrix_text(b.batch, b.rows, b.cols, false), " into C ",
                         matrix_text(c.batch, c.rows, c.cols, false),
                         ": it needs A (m, k), B (k, n) and C (m, n)."));
  common_batch("gemm", c.batch, a.batch, b.batch);
  if (c.batch > 1 && c.batch_stride == 0)
    throw_error(sentence("gemm cannot write a batch of ", c.batch,
                         " results into one matrix (C's batch stride is 0)."));
}

// C (n, n) = A (n, k) A^T, checked.
template <class TC, class TA>
void check_syrk(MatrixBatch<TC> const& c, MatrixBatch<TA> const& a) {
  if (c.rows != c.cols || a.rows != c.rows)
    throw_error(sentence("syrk cannot write A ", matrix_text(a.batch, a.rows, a.cols, false),
                         " times its transpose into C ",
                         matrix_text(c.batch, c.rows, c.cols, false),
                         ": it needs A (n, k) and a square C (n, n)."));
  common_batch("syrk", c.batch, a.batch, 1);
  if (c.batch > 1 && c.batch_stride == 0)
    throw_error(sentence("syrk cannot write a batch of ", c.batch,
                         " results into one matrix (C's batch stride is 0)."));
}

}  // namespace detail

}  // namespace tessel::exec
