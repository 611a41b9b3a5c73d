// Counting what survives pruning: the number of nonzero elements of a tensor and the fraction of
// its elements that are nonzero.
#pragma once

#include "../core/int_tuple.hpp"
#include "../tensor/for_each_coordinate.hpp"
#include "../tensor/tensor.hpp"

namespace tessel {

// Elements that compare unequal to zero (a NaN counts as nonzero; -0.0 does not).
template <TensorType T>
index_t count_nonzero(T const& t) {
  using V = typename T::value_type;
  index_t count = 0;
  for_each_coordinate(product_each(t.shape()), [&](auto... c) {
    if (!(t(c...) == V{})) ++count;
  });
  return count;
}

// count_nonzero(t) / numel(t): the kept fraction after pruning (0 for an empty tensor).
template <TensorType T>
double density(T const& t) {
  index_t n = to_index(size(t.layout()));
  return n == 0 ? 0.0 : static_cast<double>(count_nonzero(t)) / static_cast<double>(n);
}

}  // namespace tessel
