// merge_small_dims(shape, threshold, target_dims): Distributed Shampoo's dimension merging, which
// groups adjacent small extents so a tensor is preconditioned as a few large factors.
// All-static arguments give a static shape type; otherwise a DynRankTuple, from the same code.
#pragma once

#include "int_tuple.hpp"
#include "static_lift.hpp"

namespace tessel {

namespace detail {

// The contract, literally: (0) if any extent is 0; otherwise walk the extents that are not 1 from
// the last to the first (none left gives (1)); out starts with the last one; each next extent d,
// with k extents still to visit including d, is multiplied into out.back() when
// rank(out) + k > target_dims and out.back() * d <= threshold, else appended; reverse at the end.
template <std::size_t N>
TESSEL_HOST_DEVICE constexpr DynRankTuple<(N > 0 ? N : 1)> merge_small_dims_values(
    DynRankTuple<N> const& shape, index_t threshold, index_t target_dims) {
  DynRankTuple<(N > 0 ? N : 1)> out{};
  DynRankTuple<(N > 0 ? N : 1)> kept{};
  for (index_t k = 0; k < shape.rank(); ++k) {
    if (shape[k] == 0) return DynRankTuple<(N > 0 ? N : 1)>{0};
    if (shape[k] != 1) kept.push_back(shape[k]);
  }
  if (kept.empty()) return DynRankTuple<(N > 0 ? N : 1)>{1};
  out.push_back(kept.back());
  for (index_t i = kept.rank() - 2; i >= 0; --i) {
    index_t d = kept[i];
    index_t still_to_visit = i + 1;
    index_t product = 0;
    bool fits = !detail::mul_overflow(out.back(), d, product) && product <= threshold;
    if (out.rank() + still_to_visit > target_dims && fits) {
      out.back() = product;
    } else {
      out.push_back(d);
    }
  }
  out.reverse();
  return out;
}

template <class S, class Threshold, class TargetDims>
struct MergeSmallDimsStatic {
  static constexpr auto value =
      merge_small_dims_values(leaf_values(S{}), Threshold::value, TargetDims::value);
};

}  // namespace detail

// @pre shape is flat with extents >= 0
// @post size(result) == size(shape); rank(result) >= 1; no extent 1 unless the result is (1)
template <FlatIntTuple S, Integer Threshold, Integer TargetDims>
TESSEL_HOST_DEVICE constexpr auto merge_small_dims(S const& shape, Threshold threshold,
                                                   TargetDims target_dims) {
  if constexpr (is_static_v<S> && StaticInt<Threshold> && StaticInt<TargetDims>) {
    return detail::lift_flat<detail::MergeSmallDimsStatic<S, Threshold, TargetDims>>();
  } else {
    return detail::merge_small_dims_values(leaf_values(shape), to_index(threshold),
                                           to_index(target_dims));
  }
}

}  // namespace tessel
