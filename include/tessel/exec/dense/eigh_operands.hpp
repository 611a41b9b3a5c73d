// The operands of eigh (exec/eigh.hpp on the host, exec/cuda/eigh.cuh on the device), read off
// tessel tensors and checked once for both: the matrices as a MatrixBatch (operands.hpp), the
// eigenvalues as a batch of vectors and the per-matrix info as a vector, each with any strides.
#pragma once

#include "operands.hpp"

namespace tessel::exec::detail {

// Eigenvalue j of matrix b at data[b * batch_stride + j * stride].
template <class T>
struct EigenvalueBatch {
  T* data = nullptr;
  index_t batch = 1, n = 0, batch_stride = 0, stride = 1;

  constexpr T& at(index_t b, index_t j) const { return data[b * batch_stride + j * stride]; }
};

// Element b at data[b * stride].
template <class T>
struct StridedVector {
  T* data = nullptr;
  index_t n = 0, stride = 1;

  constexpr T& at(index_t b) const { return data[b * stride]; }
};

template <class T, class V, class I>
struct EighOperands {
  MatrixBatch<T> matrices;
  EigenvalueBatch<V> eigenvalues;
  StridedVector<I> info;
};

// @post the three descriptors agree on the batch and n; tessel::Error naming the shapes otherwise
template <TensorType W, TensorType M, TensorType I>
auto eigh_operands(W const& w, M const& m, I const& info) {
  auto mats = matrix_batch(m, "the matrices");
  constexpr std::size_t rm = tuple_size_v<std::remove_cvref_t<decltype(m.shape())>>;
  using SW = std::remove_cvref_t<decltype(w.shape())>;
  using SI = std::remove_cvref_t<decltype(info.shape())>;
  static_assert(Tuple<SW> && FlatIntTuple<SW> && tuple_size_v<SW> == rm - 1,
                "tessel: eigh's eigenvalues are (n) for one matrix and (batch, n) for a batch.");
  static_assert(Tuple<SI> && FlatIntTuple<SI> && tuple_size_v<SI> == 1,
                "tessel: eigh's info is a rank-1 tensor (batch), of extent 1 for one matrix.");
  auto const ws = to_array(w.shape());
  auto const wd = to_array(w.stride());
  EigenvalueBatch<typename W::element_type> vals{w.data(), rm == 3 ? ws[0] : 1, ws[rm - 2],
                                                 rm == 3 ? wd[0] : 0, wd[rm - 2]};
  StridedVector<typename I::element_type> inf{info.data(), to_array(info.shape())[0],
                                              to_array(info.stride())[0]};
  if (mats.rows != mats.cols)
    throw_error(sentence("eigh needs square matrices, got ",
                         matrix_text(mats.batch, mats.rows, mats.cols, rm == 3), "."));
  if (vals.batch != mats.batch || vals.n != mats.rows || inf.n != mats.batch)
    throw_error(sentence(
        "eigh of matrices ", matrix_text(mats.batch, mats.rows, mats.cols, rm == 3),
        " needs eigenvalues ",
        rm == 3 ? sentence("(", mats.batch, ",", mats.rows, ")") : sentence("(", mats.rows, ")"),
        " and info (", mats.batch, "), got eigenvalues ",
        rm == 3 ? sentence("(", vals.batch, ",", vals.n, ")") : sentence("(", vals.n, ")"),
        " and info (", inf.n, ")."));
  return EighOperands<typename M::element_type, typename W::element_type, typename I::element_type>{
      mats, vals, inf};
}

}  // namespace tessel::exec::detail
