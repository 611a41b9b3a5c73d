// Views of a tensor's memory with another layout: permute, select, flatten, reshape, block views,
// NumPy broadcasting and the block-to-element broadcast. All write through; none copies. Views of
// an owning temporary are refused at compile time (they would dangle).
#pragma once

#include "../core/block_layout.hpp"
#include "../core/broadcast.hpp"
#include "../core/coalesce.hpp"
#include "../core/composition.hpp"
#include "../core/select.hpp"
#include "tensor.hpp"

namespace tessel {

namespace detail {
template <class T>
constexpr void refuse_owning_temporary() {
  static_assert(!(OwningTensor<T> && !std::is_lvalue_reference_v<T>),
                "tessel: this would make a view of an owning temporary tensor, which dies at the "
                "end of the statement; keep the owning tensor in a variable first.");
}
}  // namespace detail

// The tensor with its modes reordered: mode k of the result is mode I_k.
template <std::size_t... I, class T>
requires TensorType<T>
auto permute(T&& t) {
  detail::refuse_owning_temporary<T>();
  return detail::make_view(t, t.data(), permute<I...>(t.layout()));
}

// A 2-D tensor's transpose.
template <class T>
requires TensorType<T>
auto transpose(T&& t) {
  detail::refuse_owning_temporary<T>();
  static_assert(decltype(rank(t.layout()))::value == 2, "tessel: transpose takes a 2-D tensor.");
  return detail::make_view(t, t.data(), permute<1, 0>(t.layout()));
}

// Modes I... only (the others fixed at coordinate 0).
template <std::size_t... I, class T>
requires TensorType<T>
auto select(T&& t) {
  detail::refuse_owning_temporary<T>();
  return detail::make_view(t, t.data(), select<I...>(t.layout()));
}

template <class T>
requires TensorType<T>
auto flatten(T&& t) {
  detail::refuse_owning_temporary<T>();
  return detail::make_view(t, t.data(), flatten(t.layout()));
}

// The same elements with a new shape, row-major (torch.view semantics): tessel::Error naming both
// shapes when the strides do not allow a view.
template <class T, IntTuple S>
requires TensorType<T>
auto reshape(T&& t, S const& new_shape) {
  detail::refuse_owning_temporary<T>();
  return detail::make_view(t, t.data(), reshape(t.layout(), new_shape));
}

// The block view: interleaved (B0, b0, B1, b1, ...), reordered (B0, ..., b0, ...) or merged
// (B0, ..., (b0, ...)); see block_layout. Writes through whatever the strides.
template <class T, IntTuple B, BlockOrderTag Order>
requires TensorType<T>
auto block_view(T&& t, B const& block_shape, Order order) {
  detail::refuse_owning_temporary<T>();
  return detail::make_view(t, t.data(), block_layout(t.layout(), block_shape, order));
}

// NumPy broadcasting of t to shape (stride-0 modes; a read-only use is the sensible one).
template <class T, FlatIntTuple S>
requires TensorType<T>
auto broadcast_to(T&& t, S const& shape) {
  detail::refuse_owning_temporary<T>();
  return detail::make_view(t, t.data(), broadcast_layout(t.layout(), shape));
}

// A stride-0 view of shape (B0*b0, B1*b1, ...) whose element (r, c, ...) is grid(r/b0, c/b1, ...).
// No copy.
template <class G, IntTuple B>
requires TensorType<G>
auto broadcast_block_to_element(G&& grid, B const& block_shape) {
  detail::refuse_owning_temporary<G>();
  return detail::make_view(grid, grid.data(), block_broadcast_layout(grid.layout(), block_shape));
}

// The same storage seen through any layout the caller gives; tessel::Error when the layout reaches
// past the storage (when its extent is known).
template <class T, LayoutType L>
requires TensorType<T>
auto view_as(T&& t, L const& layout) {
  detail::refuse_owning_temporary<T>();
  return detail::make_view(t, t.data(), layout);
}

}  // namespace tessel
