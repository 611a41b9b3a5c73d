// The block grid of a tensor: the grid shape (s0/b0, s1/b1, ...) for a block shape, with the
// checks every per-block operation makes before it writes anything — the block shape's rank
// (a run-time-rank block shape is checked at run time), divisibility, and a grid tensor's shape.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "../core/block_layout.hpp"
#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "tensor.hpp"

namespace tessel {

namespace detail {

// The tensor's rank as a compile-time constant; per-block operations need flat modes.
template <TensorType T>
constexpr std::size_t flat_rank() {
  using S = std::remove_cvref_t<decltype(std::declval<T const&>().shape())>;
  static_assert(Tuple<S> && FlatIntTuple<S>,
                "tessel: per-block operations need a tensor with flat modes of static rank; "
                "flatten() a hierarchical view first.");
  return tuple_size_v<S>;
}

// The block shape as a tuple of rank R. A tuple of another static rank fails to compile; a
// DynRankTuple (a shape read at run time) of another rank throws tessel::Error.
template <std::size_t R, class B, IntTuple S>
auto block_shape_of_rank(B const& b, S const& tensor_shape, char const* what) {
  if constexpr (Integer<B>) {
    static_assert(R == 1, "tessel: a single-integer block shape needs a rank-1 tensor.");
    return make_tuple(normalize_int_tuple(b));
  } else if constexpr (DynRank<B>) {
    if (static_cast<std::size_t>(b.rank()) != R)
      throw_error(sentence(what, " ", shape_text(b), " has rank ", b.rank(),
                           " but the tensor of shape ", shape_text(tensor_shape), " has rank ", R,
                           "."));
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return make_tuple(b[static_cast<index_t>(I)]...);
    }
    (std::make_index_sequence<R>{});
  } else {
    static_assert(Tuple<B> && FlatIntTuple<B>, "tessel: a block shape is a flat tuple of extents.");
    static_assert(tuple_size_v<B> == R,
                  "tessel: the block shape's rank differs from the tensor's rank.");
    return normalize_int_tuple(b);
  }
}

// Checks that grid's shape is the block grid of t for block shape b (already of t's rank).
// `what` names the grid in the sentence: "mask grid has shape (3,4) but tensor (8,16) with blocks
// (2,4) needs (4,4)."
template <TensorType T, TensorType G, Tuple B>
void check_grid_shape(T const& t, G const& grid, B const& b, char const* what) {
  constexpr std::size_t r = flat_rank<T>();
  static_assert(decltype(rank(grid.layout()))::value == static_cast<index_t>(r),
                "tessel: the grid's rank differs from the tensor's rank.");
  auto need = block_grid_shape(t.shape(), b);
  auto have = product_each(grid.shape());
  if (!(leaf_values(have) == leaf_values(need)))
    throw_error(sentence(what, " grid has shape ", shape_text(have), " but tensor ",
                         shape_text(t.shape()), " with blocks ", shape_text(b), " needs ",
                         shape_text(need), "."));
}

}  // namespace detail

// The block grid (s0/b0, s1/b1, ...) of tensor t. Static extents stay static. tessel::Error (or a
// static_assert when static) when a block extent is <= 0 or does not divide its extent, or when a
// run-time-rank block shape has the wrong rank.
template <TensorType T, class B>
auto block_grid_shape(T const& t, B const& block_shape) {
  constexpr std::size_t r = detail::flat_rank<T>();
  auto b = detail::block_shape_of_rank<r>(block_shape, t.shape(), "block shape");
  return block_grid_shape(t.shape(), b);
}

}  // namespace tessel
