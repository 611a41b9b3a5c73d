// In-place per-block updates (sparsekit View parity): apply_multiplier multiplies every block of a
// tensor by its grid value; apply_mask zeroes every block whose mask value is true. Each is one
// assignment through the executor — t = t * broadcast_block_to_element(grid, block_shape), or
// t = where(broadcast mask, 0, t) — so it runs on host and device tensors alike, writes through
// any view (strided, transposed, block views) and checks everything before writing. They live in
// the sparsity layer, not in tensor/, because they are expressions: the tensor layer does not
// include the layers above it.
#pragma once

#include <type_traits>
#include <utility>

#include "../core/block_layout.hpp"
#include "../exec/executors.hpp"
#include "../exec/host.hpp"
#include "../expr/arithmetic.hpp"
#include "../expr/where.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/tensor.hpp"
#include "../tensor/views.hpp"
#include "detail/backend.hpp"

namespace tessel {

namespace detail {

// The checks of every block update, before anything is written: t is writable and lives where X
// runs with its grid, the block shape has t's rank and divides its shape, and the grid has the
// block grid's shape (`what` names the grid in the sentence). Returns the block shape as a tuple.
template <class X, TensorType T, TensorType G, class B>
auto checked_block_update(T const& t, G const& grid, B const& block_shape, char const* what) {
  static_assert(!std::is_const_v<typename T::element_type>,
                "tessel: this writes its tensor in place, but the tensor's elements are const.");
  check_tensors_reach<X, T, G>();
  constexpr std::size_t r = flat_rank<T>();
  auto b = block_shape_of_rank<r>(block_shape, t.shape(), "block shape");
  check_grid_shape(t, grid, b, what);
  return b;
}

}  // namespace detail

// Multiplies every block of t in place by its grid value: t(block i) *= grid(i), i.e. element
// (r, c, ...) by grid(r / b0, c / b1, ...), in the type the two promote to, stored back in t's.
// grid has shape (s0/b0, s1/b1, ...). tessel::Error, with nothing written, when the block shape
// does not divide t's shape, when grid's shape is not the block grid ("multiplier grid has shape
// (3,4) but tensor (8,16) with blocks (2,4) needs (4,4).") or when a run-time-rank block shape has
// the wrong rank. One pass (one kernel on exec::Cuda).
template <class T, TensorType G, IntTuple B, exec::Executor X = exec::Auto>
requires TensorType<T>
void apply_multiplier(T&& t, G const& grid, B const& block_shape, X const& executor = {}) {
  auto view = t.view();
  auto b = detail::checked_block_update<X>(view, grid, block_shape, "multiplier");
  assign(view, view * broadcast_block_to_element(grid, b), executor);
}

// Zeroes in place every block of t whose mask value is true (sparsekit's convention: true means
// "mask out"). Elements become exactly V{}: unlike sparsekit's multiply-by-~mask, a NaN or an
// infinity in a masked block becomes 0 rather than NaN. Same checks as apply_multiplier, with
// "mask grid" in the sentence.
template <class T, TensorType G, IntTuple B, exec::Executor X = exec::Auto>
requires TensorType<T>
void apply_mask(T&& t, G const& mask_grid, B const& block_shape, X const& executor = {}) {
  using V = typename std::remove_cvref_t<T>::value_type;
  auto view = t.view();
  auto b = detail::checked_block_update<X>(view, mask_grid, block_shape, "mask");
  assign(view, where(broadcast_block_to_element(mask_grid, b), V{}, view), executor);
}

}  // namespace tessel
