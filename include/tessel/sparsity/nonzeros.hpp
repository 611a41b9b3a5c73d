// Counting what survives pruning: the number of nonzero elements of a tensor and the fraction of
// its elements that are nonzero. One reduction, sum(t != 0), through the executor; the count comes
// back to the host (after the executor's stream has reached it, for exec::Cuda).
#pragma once

#include <cstddef>
#include <type_traits>

#include "../core/int_tuple.hpp"
#include "../exec/executors.hpp"
#include "../exec/host.hpp"
#include "../expr/compare.hpp"
#include "../expr/reduce.hpp"
#include "../tensor/block_grid.hpp"
#include "../tensor/tensor.hpp"
#include "detail/backend.hpp"
#include "keep_mask.hpp"

namespace tessel {

// Elements that compare unequal to zero (a NaN counts as nonzero; -0.0 does not).
template <TensorType T, exec::Executor X = exec::Auto>
index_t count_nonzero(T const& t, X const& executor = {}) {
  detail::check_tensors_reach<X, T>();
  using V = std::remove_cv_t<typename T::value_type>;
  using Backend = detail::backend_t<X>;
  constexpr auto r = static_cast<std::size_t>(decltype(rank(t.layout()))::value);
  auto count = Backend::template scratch<index_t>(executor, 1);
  auto v = t.view();
  assign(Backend::view(count.data(), detail::unit_block<r>()), sum(v != V{}, keep), executor);
  return Backend::read(executor, count.data());
}

// count_nonzero(t) / numel(t): the kept fraction after pruning (0 for an empty tensor).
template <TensorType T, exec::Executor X = exec::Auto>
double density(T const& t, X const& executor = {}) {
  index_t n = to_index(size(t.layout()));
  return n == 0 ? 0.0 : static_cast<double>(count_nonzero(t, executor)) / static_cast<double>(n);
}

}  // namespace tessel
