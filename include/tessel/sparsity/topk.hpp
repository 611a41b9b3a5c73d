// Top-k per scope: the keep mask that keeps the k highest-scoring blocks of every scope. Exactly k
// per scope, deterministically: ties go to the lower index within the scope (row-major), and NaN
// scores rank below every number. The selection is a row body (detail/select_bodies.hpp) run by
// exec::for_each_row on the executor's tensors, host or device.
#pragma once

#include <cstddef>
#include <type_traits>

#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../exec/executors.hpp"
#include "../exec/rows.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/tensor.hpp"
#include "detail/backend.hpp"
#include "detail/scope_offsets.hpp"
#include "detail/select_bodies.hpp"
#include "scope.hpp"

namespace tessel {

namespace detail {

template <index_t K, index_t ScopeSize>
struct StaticTopkCheck {
  static_assert(K >= 0, "tessel: top-k keeps k >= 0 blocks per scope.");
  static_assert(K <= ScopeSize,
                "tessel: k exceeds the number of blocks in a scope (values in "
                "StaticTopkCheck<k, scope size>).");
  static constexpr bool ok = true;
};

// The keep mask (an owning bool tensor of grid_shape where X runs) keeping, in every scope of
// scope_shape (a tuple of the grid's rank, already checked), the k members that `scores` (a
// reader over the same scopes, see select_bodies.hpp) ranks highest. One row body per batch of
// small scopes or per large scope, through exec::for_each_row.
template <class X, Tuple G, Tuple S, class Scores>
auto topk_keep(X const& executor, G const& grid_shape, S const& scope_shape, index_t k,
               Scores const& scores) {
  constexpr std::size_t r = tuple_size_v<S>;
  auto mask = backend_t<X>::template make<bool>(executor, grid_shape);
  auto const n = size(scope_shape);  // static when the scope shape is
  index_t const scopes = to_index(n) > 0 ? to_index(size(grid_shape)) / to_index(n) : 0;
  TopkRows<Scores, r, std::remove_const_t<decltype(n)>> body{
      scores, scope_source(mask.data(), mask.layout(), scope_shape), scopes, n, k};
  for_each_row(executor, body.rows(), body.row_work(), body);
  return mask;
}

}  // namespace detail

// The keep mask (true = kept) over a grid of scores: in every scope of scope_shape, the k blocks
// with the highest scores are kept. The mask is an owning bool tensor of the scores' shape, where
// the scores live (a host tensor, or a device tensor with exec::Cuda). tessel::Error (nothing
// computed) when the scope shape does not tile the grid, or when k < 0 or k exceeds the scope
// size ("k = 5 exceeds the 4 blocks of a scope of shape (1,4)."); a static_assert when those
// values are static.
// @post every scope has exactly k true entries, and every kept score is >= every dropped one
template <TensorType Scores, class S, Integer K, exec::Executor X = exec::Auto>
auto topk_mask(Scores const& scores, S const& scope_shape, K k, X const& executor = {}) {
  detail::check_tensors_reach<X, Scores>();
  auto grid_shape = product_each(scores.shape());
  (void)scope_grid_shape(grid_shape, scope_shape);  // the scope-worded checks first
  constexpr std::size_t r = detail::flat_rank<Scores>();
  auto s = detail::block_shape_of_rank<r>(scope_shape, grid_shape, "scope shape");
  auto scope_size = size(s);
  if constexpr (StaticInt<K> && StaticInt<decltype(scope_size)>) {
    static_assert(detail::StaticTopkCheck<K::value, decltype(scope_size)::value>::ok);
  } else {
    if (to_index(k) < 0)
      detail::throw_error(detail::sentence("k = ", to_index(k),
                                           " is negative; top-k keeps k >= 0 blocks per scope."));
    if (to_index(k) > to_index(scope_size))
      detail::throw_error(detail::sentence("k = ", to_index(k), " exceeds the ",
                                           to_index(scope_size), " blocks of a scope of shape ",
                                           detail::shape_text(s), "."));
  }
  using V = std::remove_cv_t<typename Scores::value_type>;
  auto view = scores.view();
  return detail::topk_keep(
      executor, grid_shape, s, to_index(k),
      detail::SourceScores<V, r>{detail::scope_source<V const>(view.data(), view.layout(), s)});
}

}  // namespace tessel
