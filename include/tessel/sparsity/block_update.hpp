// In-place per-block updates (sparsekit View parity): apply_multiplier multiplies every block of a
// tensor by its grid value, as the assignment t = t * broadcast_block_to_element(grid,
// block_shape); apply_mask zeroes every block whose mask value is true, as a row body that writes
// only those blocks (a where() for single elements). Both go through the executor, so they run on
// host and device tensors alike, write through any view (strided, transposed, block views) and
// check everything before writing. They live in the sparsity layer, not in tensor/, because they
// are executor work: the tensor layer does not include the layers above it.
#pragma once

#include <type_traits>
#include <utility>

#include "../core/block_layout.hpp"
#include "../exec/executors.hpp"
#include "../exec/host.hpp"
#include "../exec/rows.hpp"
#include "../expr/arithmetic.hpp"
#include "../expr/where.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/tensor.hpp"
#include "../tensor/views.hpp"
#include "detail/backend.hpp"
#include "detail/scope_offsets.hpp"
#include "detail/zero_bodies.hpp"

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

// Blocks of fewer elements than this are zeroed by the elementwise where(), larger ones by the
// row body that skips kept blocks. Measured on a 4096x4096 f32 tensor with blocks (1, b) and half
// of them masked at random, one thread: where() 48 / 38 / 32 / 26 ms for b = 2 / 4 / 8 / 32, the
// row body 122 / 40 / 21 / 8 ms (its branch per block mispredicts; where() selects bits).
inline constexpr index_t min_skipped_block = 8;

// Zeroes every block of view (block shape b, checked) whose grid value as a bool is ZeroIf:
// blocks of at least min_skipped_block elements through a row body that writes nothing else
// (detail/zero_bodies.hpp), smaller ones through where(), branch-free and vectorized.
// @pre grid does not overlap view's elements
template <bool ZeroIf, class X, TensorType V, TensorType G, Tuple B>
void zero_blocks(X const& executor, V const& view, G const& grid, B const& b) {
  constexpr std::size_t r = flat_rank<V>();
  using T = std::remove_cv_t<typename V::element_type>;
  using GV = std::remove_cv_t<typename G::value_type>;
  auto const g = grid.view();
  auto const elements = size(b);  // static when the block shape is
  using Elements = std::remove_const_t<decltype(elements)>;
  auto elementwise = [&] {
    auto const mask = broadcast_block_to_element(g, b);
    if constexpr (ZeroIf)
      assign(view, where(mask, T{}, view), executor);
    else
      assign(view, where(mask, view, T{}), executor);
  };
  auto skipping = [&] {
    auto const cells = flat_offsets(g.shape(), g.stride());
    ZeroBlocksRows<T, GV, r, std::remove_const_t<decltype(cells)>, Elements, ZeroIf> body{
        scope_source(view.data(), view.layout(), b), g.data(), cells, to_index(size(g.layout())),
        elements};
    for_each_row(executor, body.rows(), body.row_work(), body);
  };
  if constexpr (StaticInt<Elements>) {
    if constexpr (min_skipped_block > Elements::value)
      elementwise();
    else
      skipping();
  } else {
    if (elements < min_skipped_block)
      elementwise();
    else
      skipping();
  }
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
// "mask out"), and writes nothing else. Elements become exactly V{}: unlike sparsekit's
// multiply-by-~mask, a NaN or an infinity in a masked block becomes 0 rather than NaN. Same checks
// as apply_multiplier, with "mask grid" in the sentence. Blocks are not an elementwise where():
// that would read and rewrite every element; a row body (one block, or a batch of small blocks,
// per row) reads the grid and writes only the masked blocks. A mask of single elements is a
// where() (branch-free and vectorized).
// @pre mask_grid does not overlap t's elements
template <class T, TensorType G, IntTuple B, exec::Executor X = exec::Auto>
requires TensorType<T>
void apply_mask(T&& t, G const& mask_grid, B const& block_shape, X const& executor = {}) {
  auto view = t.view();
  auto b = detail::checked_block_update<X>(view, mask_grid, block_shape, "mask");
  detail::zero_blocks<true>(executor, view, mask_grid, b);
}

}  // namespace tessel
