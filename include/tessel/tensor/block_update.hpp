// In-place per-block updates (sparsekit View parity): apply_multiplier multiplies every block of a
// tensor by its grid value; apply_mask zeroes every block whose mask value is true. They write
// through any view (strided, transposed, block views) and check everything before writing.
#pragma once

#include <type_traits>
#include <utility>

#include "../core/block_layout.hpp"
#include "block_grid.hpp"
#include "for_each_coordinate.hpp"
#include "tensor.hpp"
#include "views.hpp"

namespace tessel {

namespace detail {

// f(element reference, grid value) for every element of t, block by block (blocks in row-major
// grid order, elements row-major within a block), after all the checks. `what` names the grid in
// error sentences.
// @pre grid does not overlap t's elements (a block's value is read once, before its block is
//      written, but other blocks' values could already have been overwritten)
template <class T, TensorType G, class B, class F>
requires TensorType<T>
void update_blocks(T&& t, G const& grid, B const& block_shape, char const* what, F&& f) {
  using Tn = std::remove_cvref_t<T>;
  static_assert(!std::is_const_v<typename Tn::element_type>,
                "tessel: this writes its tensor in place, but the tensor's elements are const.");
  static_assert(std::is_same_v<typename Tn::space, HostSpace> &&
                    std::is_same_v<typename std::remove_cvref_t<G>::space, HostSpace>,
                "tessel: in-place block updates run on the host; these tensors live in device "
                "memory.");
  constexpr std::size_t r = flat_rank<Tn>();
  auto b = block_shape_of_rank<r>(block_shape, t.shape(), "block shape");
  check_grid_shape(t, grid, b, what);
  auto view = t.view();
  auto blocks = block_view(view, b, BlockOrder::merged);  // (B0, B1, ..., (b0, b1, ...))
  index_t n = to_index(size(b));
  for_each_coordinate(product_each(grid.shape()), [&](auto... g) {
    auto value = grid(g...);
    for (index_t k = 0; k < n; ++k) f(blocks(g..., k), value);
  });
}

}  // namespace detail

// Multiplies every block of t in place by its grid value: t(block i) *= grid(i), i.e. element
// (r, c, ...) by grid(r / b0, c / b1, ...). grid has shape (s0/b0, s1/b1, ...).
// tessel::Error, with nothing written, when the block shape does not divide t's shape, when grid's
// shape is not the block grid ("multiplier grid has shape (3,4) but tensor (8,16) with blocks
// (2,4) needs (4,4).") or when a run-time-rank block shape has the wrong rank.
template <class T, TensorType G, class B>
requires TensorType<T>
void apply_multiplier(T&& t, G const& grid, B const& block_shape) {
  using V = typename std::remove_cvref_t<T>::value_type;
  detail::update_blocks(std::forward<T>(t), grid, block_shape, "multiplier",
                        [](auto& x, auto const& m) { x = static_cast<V>(x * m); });
}

// Zeroes in place every block of t whose mask value is true (sparsekit's convention: true means
// "mask out"). Elements become exactly V{}: unlike sparsekit's multiply-by-~mask, a NaN or an
// infinity in a masked block becomes 0 rather than NaN. Same checks as apply_multiplier, with
// "mask grid" in the sentence.
template <class T, TensorType G, class B>
requires TensorType<T>
void apply_mask(T&& t, G const& mask_grid, B const& block_shape) {
  using V = typename std::remove_cvref_t<T>::value_type;
  detail::update_blocks(std::forward<T>(t), mask_grid, block_shape, "mask",
                        [](auto& x, auto const& masked) {
                          if (static_cast<bool>(masked)) x = V{};
                        });
}

}  // namespace tessel
