// Mode-level rearrangements of a layout: select / permute (pick modes by position) and flatten
// (hierarchical modes become top-level modes). These never depend on values, so mixed static and
// dynamic layouts keep every static integer.
#pragma once

#include "layout.hpp"

namespace tessel {

// The layout made of modes I... of l, in that order.
template <std::size_t... I, LayoutType L>
TESSEL_HOST_DEVICE constexpr auto select(L const& l) {
  static_assert(!DynRank<decltype(l.shape())>,
                "tessel: select<I...> needs a layout whose rank is known at compile time.");
  return Layout(make_tuple(get<I>(l.shape())...), make_tuple(get<I>(l.stride())...));
}

namespace detail {
template <std::size_t N, std::size_t... I>
constexpr bool is_permutation() {
  bool seen[N == 0 ? 1 : N]{};
  for (std::size_t i : {I...}) {
    if (i >= N || seen[i]) return false;
    seen[i] = true;
  }
  return sizeof...(I) == N;
}
}  // namespace detail

// Mode k of the result is mode I_k of l; I... is a permutation of 0..rank-1.
template <std::size_t... I, LayoutType L>
TESSEL_HOST_DEVICE constexpr auto permute(L const& l) {
  static_assert(detail::is_permutation<decltype(rank(l))::value, I...>(),
                "tessel: permute<I...> needs each mode position exactly once.");
  return select<I...>(l);
}

// Hierarchical modes become top-level modes.
// @post rank(result) == number of leaves; same offset for every 1-D index
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto flatten(L const& l) {
  return Layout(flatten(l.shape()), flatten(l.stride()));
}

}  // namespace tessel
