// Top-k per scope: the keep mask that keeps the k highest-scoring blocks of every scope. Exactly k
// per scope, deterministically: ties go to the lower index within the scope (row-major), and NaN
// scores rank below every number.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <type_traits>
#include <vector>

#include "../core/error.hpp"
#include "../core/int_tuple.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/for_each_coordinate.hpp"
#include "../tensor/host_tensor.hpp"
#include "../tensor/tensor.hpp"
#include "scope.hpp"

namespace tessel {

namespace detail {

template <class V>
constexpr bool is_nan(V const& x) {
  if constexpr (std::is_floating_point_v<V>) {
    return x != x;
  } else {
    return false;
  }
}

// A strict total order on (score, index): higher scores first, NaN last, then lower index first.
template <class V>
constexpr bool ranks_before(V const& a, index_t ia, V const& b, index_t ib) {
  bool na = is_nan(a), nb = is_nan(b);
  if (na != nb) return nb;
  if (!na && a != b) return b < a;
  return ia < ib;
}

template <index_t K, index_t ScopeSize>
struct StaticTopkCheck {
  static_assert(K >= 0, "tessel: top-k keeps k >= 0 blocks per scope.");
  static_assert(K <= ScopeSize,
                "tessel: k exceeds the number of blocks in a scope (values in "
                "StaticTopkCheck<k, scope size>).");
  static constexpr bool ok = true;
};

}  // namespace detail

// The keep mask (true = kept) over a grid of scores: in every scope of scope_shape, the k blocks
// with the highest scores are kept. The mask is an owning bool host tensor of the scores' shape.
// tessel::Error (nothing computed) when the scope shape does not tile the grid, or when k < 0 or
// k exceeds the scope size ("k = 5 exceeds the 4 blocks of a scope of shape (1,4)."); a
// static_assert when those values are static.
// @post every scope has exactly k true entries, and every kept score is >= every dropped one
template <TensorType Scores, class S, Integer K>
auto topk_mask(Scores const& scores, S const& scope_shape, K k) {
  auto grid_shape = product_each(scores.shape());
  auto scopes = scope_grid_shape(grid_shape, scope_shape);
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
                                           detail::plain_string(s), "."));
  }
  auto mask = make_host_tensor<bool>(grid_shape);
  auto score_view = scores.view();
  auto in_scope = scope_view(score_view, s);  // (S0, S1, ..., (g0, g1, ...))
  auto keep = scope_view(mask, s);
  index_t n = to_index(scope_size);
  index_t kk = to_index(k);
  std::vector<index_t> order(static_cast<std::size_t>(n));
  for_each_coordinate(scopes, [&](auto... c) {
    std::iota(order.begin(), order.end(), index_t{0});
    std::partial_sort(order.begin(), order.begin() + kk, order.end(), [&](index_t a, index_t b) {
      return detail::ranks_before(in_scope(c..., a), a, in_scope(c..., b), b);
    });
    for (index_t i = 0; i < kk; ++i) keep(c..., order[static_cast<std::size_t>(i)]) = true;
  });
  return mask;
}

}  // namespace tessel
