// Where a view sits in its storage (sparsekit View parity): ndim / numel as free functions, the
// storage offset of a view, the linear offset of a view coordinate, and the (row, col) in a 2-D
// parameter that a view coordinate reaches.
//
// The storage origin of a tensor is the pointer its root was made over: the owned buffer of
// make_host_tensor, the span given to make_tensor(std::span, ...), or the raw pointer given to
// make_tensor(ptr, ...). Every view made from a tensor (slices, permute, block views, ...)
// inherits that origin. Offsets here are counted in elements from the origin.
#pragma once

#include <cstddef>
#include <type_traits>

#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "tensor.hpp"

namespace tessel {

// Number of modes (sparsekit's View.ndim); the same as rank(t).
template <TensorType T>
TESSEL_HOST_DEVICE constexpr auto ndim(T const& t) {
  return rank(t.layout());
}

// Number of elements (sparsekit's View.numel()); the same as size(t).
template <TensorType T>
TESSEL_HOST_DEVICE constexpr auto numel(T const& t) {
  return size(t.layout());
}

namespace detail {

// Engines that record the storage they point into (ViewEngine does; owning engines are their own
// storage, seen through .view()).
template <class E>
concept RecordsStorage = requires(E const& e) {
  e.storage;
  e.storage_size;
};

template <TensorType T>
auto view_engine(T const& t) {
  return t.view().engine();
}

// Checks c against the shape as Tensor::at does (one coordinate per mode, or a 1-D index), with
// the same sentence.
template <LayoutType L, Integer... C>
void check_coordinate(L const& l, C const&... c) {
  auto extents = to_vector(product_each(l.shape()));
  index_t coords[] = {to_index(c)..., 0};
  bool ok = true;
  if (sizeof...(C) == 1 && extents.size() != 1) {
    ok = coords[0] >= 0 && coords[0] < to_index(size(l));
  } else {
    ok = sizeof...(C) == extents.size();
    for (std::size_t k = 0; ok && k < sizeof...(C); ++k)
      ok = coords[k] >= 0 && coords[k] < extents[k];
  }
  if (!ok)
    throw_error(sentence("coordinate ", tessel::detail::shape_text(make_tuple(to_index(c)...)),
                         " is out of bounds for a tensor of shape ",
                         tessel::detail::shape_text(product_each(l.shape())), "."));
}

}  // namespace detail

// Elements from the storage origin to t.data(): 0 for a root tensor, the start of a slice
// otherwise. An engine that records no origin counts from t.data() itself (the result is 0).
// @post t.data() == origin + storage_offset(t)
template <TensorType T>
index_t storage_offset(T const& t) {
  auto e = detail::view_engine(t);
  if constexpr (detail::RecordsStorage<decltype(e)>) {
    if (e.storage != nullptr) return static_cast<index_t>(e.data() - e.storage);
  }
  return 0;
}

// The element offset of view coordinate c from the storage origin:
//   linear_offset(t, c...) == storage_offset(t) + t.layout()(c...)
// so that origin[linear_offset(t, c...)] is t(c...). c is one integer per mode or a single 1-D
// row-major index, as for t(c...). tessel::Error names the coordinate and the shape when c is out
// of bounds. (sparsekit's View.linear_offset.)
template <TensorType T, Integer... C>
index_t linear_offset(T const& t, C const&... c) {
  detail::check_coordinate(t.layout(), c...);
  return storage_offset(t) + to_index(t.layout()(c...));
}

// A (row, col) position in a 2-D parameter.
struct RowCol {
  index_t row = 0;
  index_t col = 0;
  friend constexpr bool operator==(RowCol const&, RowCol const&) = default;
};

// The (row, col) of the 2-D parameter of shape param_shape that view coordinate c reaches, when
// t's storage is exactly that parameter, compact row-major: (o / cols, o % cols) with
// o = linear_offset(t, c...). (sparsekit's View.to_param_rc.)
// tessel::Error when t's storage extent is unknown (a view made from a raw pointer), when the
// storage does not hold exactly rows * cols elements, or when c is out of bounds.
template <TensorType T, IntTuple P, Integer... C>
RowCol to_param_rc(T const& t, P const& param_shape, C const&... c) {
  static_assert(Tuple<P> && FlatIntTuple<P> && !DynRank<P> && tuple_size_v<P> == 2,
                "tessel: to_param_rc maps into a 2-D parameter; pass its shape as (rows, cols).");
  auto e = detail::view_engine(t);
  static_assert(detail::RecordsStorage<decltype(e)>,
                "tessel: to_param_rc needs a view whose engine records its storage.");
  index_t rows = to_index(get<0>(param_shape));
  index_t cols = to_index(get<1>(param_shape));
  if (!e.bounded())
    detail::throw_error(detail::sentence(
        "to_param_rc needs a view of storage of known extent, but this view of shape ",
        tessel::detail::shape_text(product_each(t.shape())),
        " was made from a raw pointer; make it from a std::span or an owning tensor."));
  if (rows < 0 || cols < 0 || rows * cols != e.storage_size)
    detail::throw_error(
        detail::sentence("parameter shape ", tessel::detail::shape_text(param_shape), " has ",
                         rows * cols, " elements but the view's storage holds ", e.storage_size,
                         "; to_param_rc needs storage that is "
                         "exactly the compact parameter."));
  index_t o = linear_offset(t, c...);
  return RowCol{o / cols, o % cols};
}

// The (row, col) in param (a 2-D, compact row-major tensor: strides (cols, 1)) that view
// coordinate c of t reaches; t must view param's storage. tessel::Error when param is not compact,
// when t views other storage, when c is out of bounds, or when the element lies outside param.
template <TensorType T, TensorType P, Integer... C>
RowCol to_param_rc(T const& t, P const& param, C const&... c) {
  static_assert(decltype(rank(param.layout()))::value == 2,
                "tessel: to_param_rc maps into a 2-D parameter; this parameter tensor is not 2-D.");
  auto et = detail::view_engine(t);
  auto ep = detail::view_engine(param);
  static_assert(detail::RecordsStorage<decltype(et)> && detail::RecordsStorage<decltype(ep)>,
                "tessel: to_param_rc needs views whose engines record their storage.");
  auto extents = to_vector(product_each(param.shape()));
  auto strides = to_vector(flatten(param.stride()));
  index_t rows = extents[0];
  index_t cols = extents[1];
  bool compact = FlatIntTuple<decltype(param.shape())> && (cols <= 1 || strides[1] == 1) &&
                 (rows <= 1 || strides[0] == cols);
  if (!compact)
    detail::throw_error(detail::sentence(
        "parameter of shape ", tessel::detail::shape_text(product_each(param.shape())),
        " has strides ", tessel::detail::shape_text(param.stride()),
        "; to_param_rc needs a compact row-major parameter, strides (", cols, ",1)."));
  if (static_cast<void const*>(et.storage) != static_cast<void const*>(ep.storage))
    detail::throw_error(
        detail::sentence("the view of shape ", tessel::detail::shape_text(product_each(t.shape())),
                         " does not view the storage of the parameter of shape ",
                         tessel::detail::shape_text(product_each(param.shape())), "."));
  detail::check_coordinate(t.layout(), c...);
  index_t o = static_cast<index_t>(et.data() - ep.data()) + to_index(t.layout()(c...));
  if (o < 0 || o >= rows * cols)
    detail::throw_error(
        detail::sentence("coordinate ", tessel::detail::shape_text(make_tuple(to_index(c)...)),
                         " of the view reaches element ", o,
                         " from the parameter's start, outside the parameter of shape ",
                         tessel::detail::shape_text(product_each(param.shape())), "."));
  return RowCol{o / cols, o % cols};
}

}  // namespace tessel
