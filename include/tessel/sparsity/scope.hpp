// Scopes: groups of blocks that compete with each other when blocks are pruned. A scope shape
// (g0, g1, ...) tiles the block grid (B0, B1, ...): (1, B1) makes every row of blocks a scope,
// (1, m) every m consecutive blocks along a row, (B0, B1) the whole tensor.
#pragma once

#include <cstddef>

#include "../core/block_layout.hpp"
#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/tensor.hpp"
#include "../tensor/views.hpp"

namespace tessel {

namespace detail {

template <index_t Blocks, index_t ScopeExtent>
struct StaticScopeDivides {
  static_assert(ScopeExtent > 0, "tessel: scope extents must be > 0.");
  static_assert(ScopeExtent <= 0 || Blocks % ScopeExtent == 0,
                "tessel: the scope shape does not divide the block grid (blocks % scope extent != "
                "0 for the values in StaticScopeDivides<blocks, scope extent>).");
  static constexpr bool ok = true;
};

// Static pairs at compile time, the rest here, with a sentence naming both shapes and the mode.
template <Tuple G, Tuple S>
void check_scope_shape(G const& grid_shape, S const& scope_shape) {
  index_t bad_mode = -1;
  for_each_indexed(grid_shape, [&](auto i, auto gi) {
    auto si = get<decltype(i)::value>(scope_shape);
    if constexpr (StaticInt<decltype(gi)> && StaticInt<decltype(si)>) {
      static_assert(StaticScopeDivides<decltype(gi)::value, decltype(si)::value>::ok);
    } else {
      if (bad_mode < 0 && (to_index(si) <= 0 || to_index(gi) % to_index(si) != 0))
        bad_mode = static_cast<index_t>(decltype(i)::value);
    }
  });
  if (bad_mode < 0) return;
  auto gv = leaf_values(grid_shape);
  auto sv = leaf_values(scope_shape);
  if (sv[bad_mode] <= 0)
    throw_error(sentence("scope shape ", shape_text(scope_shape), " has extent ", sv[bad_mode],
                         " in mode ", bad_mode, "; scope extents must be > 0."));
  throw_error(sentence("scope shape ", shape_text(scope_shape), " does not divide the block grid ",
                       shape_text(grid_shape), ": mode ", bad_mode, " has ", gv[bad_mode],
                       " blocks, which is not a multiple of ", sv[bad_mode], "."));
}

}  // namespace detail

// The number of scopes along each mode, (B0/g0, B1/g1, ...). Static extents stay static.
// tessel::Error when a scope extent is <= 0 or does not divide its grid extent, or when a
// run-time-rank scope shape has the wrong rank; a static_assert when the values are static.
template <IntTuple G, class S>
auto scope_grid_shape(G const& grid_shape, S const& scope_shape) {
  auto g = [&] {  // a single extent is a rank-1 grid
    auto n = detail::normalize_int_tuple(grid_shape);
    if constexpr (Integer<decltype(n)>) {
      return make_tuple(n);
    } else {
      return n;
    }
  }();
  static_assert(FlatIntTuple<decltype(g)> && !DynRank<decltype(g)>,
                "tessel: a block grid shape is a flat tuple of static rank.");
  constexpr std::size_t r = tuple_size_v<decltype(g)>;
  auto s = detail::block_shape_of_rank<r>(scope_shape, g, "scope shape");
  detail::check_scope_shape(g, s);
  return transform(g, s, [](auto gi, auto si) { return gi / si; });
}

// The scope view of a grid tensor (scores or a mask): modes (S0, S1, ..., (g0, g1, ...)) — the
// scope coordinate, then the scope's blocks as one mode in row-major order. A write-through view
// (the merged block view of the grid with blocks of the scope shape).
template <class G, class S>
requires TensorType<G>
auto scope_view(G&& grid, S const& scope_shape) {
  (void)scope_grid_shape(product_each(grid.shape()), scope_shape);  // scope-worded checks first
  constexpr std::size_t r = detail::flat_rank<std::remove_cvref_t<G>>();
  auto s = detail::block_shape_of_rank<r>(scope_shape, grid.shape(), "scope shape");
  return block_view(std::forward<G>(grid), s, BlockOrder::merged);
}

}  // namespace tessel
