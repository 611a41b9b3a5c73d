// materialize(view): an owning, compact row-major host copy of any host tensor or view — the
// explicit copy that sparsekit's merged block view and broadcast_block_to_element make silently.
#pragma once

#include <type_traits>

#include "../core/int_tuple.hpp"
#include "../core/layout.hpp"
#include "for_each_coordinate.hpp"
#include "host_tensor.hpp"
#include "memory_space.hpp"
#include "tensor.hpp"

namespace tessel {

// An owning host tensor of shape product_each(shape(t)) (each top-level mode flattened to its
// size, static extents kept static) holding t's values: result(c...) == t(c...) for every
// coordinate. A merged block view (B0, B1, (b0, b1)) becomes a (B0, B1, b0*b1) tensor, as in
// sparsekit; broadcast_block_to_element(grid, b) becomes a dense (B0*b0, B1*b1) tensor.
// @post result and t share no memory; writes to one do not reach the other
template <TensorType T>
auto materialize(T const& t) {
  using Tn = std::remove_cvref_t<T>;
  static_assert(std::is_same_v<typename Tn::space, HostSpace>,
                "tessel: materialize reads host memory; this tensor lives in device memory.");
  auto shape = product_each(detail::as_mode_tuple(t.shape()));
  auto out = make_host_tensor<typename Tn::value_type>(shape);
  for_each_coordinate(shape, [&](auto... c) { out(c...) = t(c...); });
  return out;
}

}  // namespace tessel
