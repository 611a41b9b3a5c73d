// Applying keep masks in place. The sparsity layer's masks say what survives (true = kept), as
// torch.nn.utils.prune and cuSPARSELt masks do; apply_keep_mask zeroes every block whose keep
// value is false. (apply_mask, in tensor/block_update.hpp, is the complement: true = zero it.)
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "../core/int.hpp"
#include "../core/tuple.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/block_update.hpp"
#include "../tensor/tensor.hpp"

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
template <class T, TensorType G, class B>
requires TensorType<T>
void apply_keep_mask(T&& t, G const& keep, B const& block_shape) {
  using V = typename std::remove_cvref_t<T>::value_type;
  detail::update_blocks(std::forward<T>(t), keep, block_shape, "keep mask",
                        [](auto& x, auto const& kept) {
                          if (!static_cast<bool>(kept)) x = V{};
                        });
}

// An element-level keep mask (the shape of t): zeroes every element whose keep value is false.
template <class T, TensorType G>
requires TensorType<T>
void apply_keep_mask(T&& t, G const& keep) {
  constexpr std::size_t r = detail::flat_rank<std::remove_cvref_t<T>>();
  apply_keep_mask(std::forward<T>(t), keep, detail::unit_block<r>());
}

}  // namespace tessel
