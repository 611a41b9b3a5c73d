// Applying keep masks in place. The sparsity layer's masks say what survives (true = kept), as
// torch.nn.utils.prune and cuSPARSELt masks do; apply_keep_mask zeroes every block whose keep
// value is false, through the executor. (apply_mask, in sparsity/block_update.hpp, is the
// complement: true = zero it.)
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../core/int.hpp"
#include "../core/tuple.hpp"
#include "../exec/executors.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/tensor.hpp"
#include "../tensor/views.hpp"
#include "block_update.hpp"

namespace tessel {

namespace detail {
template <std::size_t R>
constexpr auto unit_block() {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_tuple((void(I), Int<1>{})...);
  }
  (std::make_index_sequence<R>{});
}
}  // namespace detail

// Zeroes in place every block of t whose keep value is false; keep has the block grid's shape
// (s0/b0, s1/b1, ...). tessel::Error before anything is written when the shapes disagree ("keep
// mask grid has shape (3,4) but tensor (8,16) with blocks (2,4) needs (4,4).").
// Writes only the zeroed blocks (as apply_mask does; a where() for single elements).
// @pre keep does not overlap t's elements
template <class T, TensorType G, IntTuple B, exec::Executor X = exec::Auto>
requires TensorType<T>
void apply_keep_mask(T&& t, G const& keep, B const& block_shape, X const& executor = {}) {
  auto view = t.view();
  auto b = detail::checked_block_update<X>(view, keep, block_shape, "keep mask");
  detail::zero_blocks<false>(executor, view, keep, b);
}

// An element-level keep mask (the shape of t): zeroes every element whose keep value is false.
template <class T, TensorType G, exec::Executor X = exec::Auto>
requires TensorType<T>
void apply_keep_mask(T&& t, G const& keep, X const& executor = {}) {
  constexpr std::size_t r = detail::flat_rank<std::remove_cvref_t<T>>();
  apply_keep_mask(std::forward<T>(t), keep, detail::unit_block<r>(), executor);
}

}  // namespace tessel
