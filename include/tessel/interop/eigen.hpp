// Eigen <-> tessel tensor views, both ways without copying (writes go through):
//   as_eigen(t)         rank-1 / rank-2 tensor -> Eigen::Map<Matrix (row-major), Unaligned,
//                       Stride<Dynamic, Dynamic>> (rank 1 is a column vector)
//   from_eigen(m)       Eigen Matrix / Map / Block with direct access -> rank-2 tensor view
//   as_eigen_tensor(t)  compact row-major rank-N tensor -> Eigen::TensorMap<Tensor<T, N, RowMajor>>
//   from_eigen(tm)      Eigen::Tensor / TensorMap -> rank-N tensor view (a column-major Eigen
//                       tensor becomes one with column-major strides: same element (i, j, ...))
// Not part of <tessel/tessel.hpp>: Eigen's Tensor module costs about 2 s of compile time, so
// include <tessel/interop/eigen.hpp> where you need it.
#pragma once

#include <Eigen/Core>
#include <type_traits>
#include <unsupported/Eigen/CXX11/Tensor>
#include <utility>

#include "../core/error.hpp"
#include "../core/layout.hpp"
#include "../core/print.hpp"
#include "../tensor/tensor.hpp"

namespace tessel {

namespace detail {

template <TensorType T>
constexpr std::size_t eigen_rank() {
  using S = std::remove_cvref_t<decltype(std::declval<T const&>().shape())>;
  static_assert(FlatIntTuple<S> && !DynRank<S>,
                "tessel: Eigen views need a tensor with flat modes and a rank known at compile "
                "time (flatten(t) first).");
  return static_cast<std::size_t>(decltype(rank(std::declval<T const&>().layout()))::value);
}

template <class T>
void check_eigen_element() {
  static_assert(std::is_arithmetic_v<std::remove_cv_t<T>>,
                "tessel: Eigen views hold arithmetic elements (convert half / bfloat16 first).");
}

}  // namespace detail

// A rank-1 or rank-2 host tensor as an Eigen::Map over the same memory. Rank 2 is a row-major
// matrix with the tensor's strides (outer = row stride, inner = column stride); rank 1 is a
// column vector with the tensor's stride.
template <TensorType T>
auto as_eigen(T const& t) {
  using E = typename T::element_type;
  detail::check_eigen_element<E>();
  static_assert(std::is_same_v<typename T::space, HostSpace>,
                "tessel: Eigen views need host tensors.");
  constexpr std::size_t R = detail::eigen_rank<T>();
  static_assert(R == 1 || R == 2, "tessel: as_eigen takes a rank-1 or rank-2 tensor.");
  using Dyn = Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>;
  using V = std::remove_cv_t<E>;
  if constexpr (R == 2) {
    using M = Eigen::Matrix<V, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using MapT =
        Eigen::Map<std::conditional_t<std::is_const_v<E>, M const, M>, Eigen::Unaligned, Dyn>;
    index_t const rows = to_index(get<0>(t.shape())), cols = to_index(get<1>(t.shape()));
    return MapT(t.data(), rows, cols,
                Dyn(to_index(get<0>(t.stride())), to_index(get<1>(t.stride()))));
  } else {
    using M = Eigen::Matrix<V, Eigen::Dynamic, 1>;
    using MapT =
        Eigen::Map<std::conditional_t<std::is_const_v<E>, M const, M>, Eigen::Unaligned, Dyn>;
    index_t const n = leaf_values(t.shape())[0];
    index_t const inner = leaf_values(t.stride())[0];
    return MapT(t.data(), n, 1, Dyn(n * inner, inner));
  }
}

// An Eigen dense object with direct access (Matrix, Array, Map, Block) as a rank-2 host tensor
// view of its coefficients: element (i, j) of the tensor is m(i, j).
template <class Derived>
requires(
    static_cast<bool>(Eigen::internal::traits<Derived>::Flags&
                          Eigen::DirectAccessBit)) auto from_eigen(Eigen::DenseBase<Derived>& m) {
  auto& d = m.derived();
  detail::check_eigen_element<typename Derived::Scalar>();
  index_t const outer = d.outerStride(), inner = d.innerStride();
  bool const row_major = Derived::IsRowMajor;
  index_t const rs = row_major ? outer : inner;
  index_t const cs = row_major ? inner : outer;
  return make_tensor(d.data(), make_layout(make_shape(static_cast<index_t>(d.rows()),
                                                      static_cast<index_t>(d.cols())),
                                           make_stride(rs, cs)));
}

// The same for an Eigen::Map or Block temporary (a view: writes go to the mapped memory).
template <class Derived>
requires(
    static_cast<bool>(Eigen::internal::traits<Derived>::Flags&
                          Eigen::DirectAccessBit)) auto from_eigen(Eigen::DenseBase<Derived>&& m) {
  return from_eigen(static_cast<Eigen::DenseBase<Derived>&>(m));
}

// A compact row-major rank-N host tensor as an Eigen::TensorMap with RowMajor layout (Eigen's
// TensorMap has no strides, so any other layout is a tessel::Error).
template <TensorType T>
auto as_eigen_tensor(T const& t) {
  using E = typename T::element_type;
  detail::check_eigen_element<E>();
  static_assert(std::is_same_v<typename T::space, HostSpace>,
                "tessel: Eigen views need host tensors.");
  constexpr std::size_t R = detail::eigen_rank<T>();
  auto const shape = leaf_values(t.shape());
  auto const have = leaf_values(t.stride());
  auto const want = leaf_values(make_layout(t.shape()).stride());
  bool ok = true;
  for (index_t k = 0; k < shape.rank(); ++k) ok = ok && (shape[k] <= 1 || have[k] == want[k]);
  if (!ok)
    detail::throw_error(
        detail::sentence("an Eigen::TensorMap needs a compact row-major tensor, "
                         "not one with layout ",
                         tessel::detail::layout_text(t.layout()), "."));
  using V = std::remove_cv_t<E>;
  using TT = Eigen::Tensor<V, static_cast<int>(R), Eigen::RowMajor, Eigen::Index>;
  using MapT = Eigen::TensorMap<std::conditional_t<std::is_const_v<E>, TT const, TT>>;
  Eigen::array<Eigen::Index, R> dims{};
  for (std::size_t k = 0; k != R; ++k) dims[k] = shape[static_cast<index_t>(k)];
  return MapT(t.data(), dims);
}

namespace detail {
template <class TensorLike>
auto from_eigen_tensor(TensorLike& m) {
  using Scalar = std::remove_reference_t<decltype(*m.data())>;
  check_eigen_element<Scalar>();
  constexpr int R = std::remove_cvref_t<TensorLike>::NumIndices;
  constexpr bool row_major = (static_cast<int>(std::remove_cvref_t<TensorLike>::Layout) ==
                              static_cast<int>(Eigen::RowMajor));
  auto const& dims = m.dimensions();
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    index_t extents[R == 0 ? 1 : R] = {static_cast<index_t>(dims[I])...};
    index_t strides[R == 0 ? 1 : R] = {};
    index_t acc = 1;
    if constexpr (row_major) {
      for (int k = R - 1; k >= 0; --k) {
        strides[k] = acc;
        acc *= extents[k];
      }
    } else {
      for (int k = 0; k < R; ++k) {
        strides[k] = acc;
        acc *= extents[k];
      }
    }
    return make_tensor(m.data(),
                       make_layout(make_shape(extents[I]...), make_stride(strides[I]...)));
  }
  (std::make_index_sequence<R>{});
}
}  // namespace detail

// An Eigen::Tensor or TensorMap (either storage order) as a rank-N host tensor view.
template <class Scalar, int R, int Options, class IndexType>
auto from_eigen(Eigen::Tensor<Scalar, R, Options, IndexType>& m) {
  return detail::from_eigen_tensor(m);
}
template <class PlainObjectType, int Options, template <class> class MakePointer>
auto from_eigen(Eigen::TensorMap<PlainObjectType, Options, MakePointer> const& m) {
  return detail::from_eigen_tensor(m);
}

}  // namespace tessel
