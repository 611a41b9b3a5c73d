// coalesce: the shortest flat layout with the same mapping; remove_zero_strides: drop broadcast
// (stride-0) modes. Both are plans whose answer's rank depends on values: a static layout gives a
// static layout type, anything else a run-time-rank layout, computed by the same code.
#pragma once

#include "layout.hpp"
#include "static_lift.hpp"

namespace tessel {

namespace detail {

template <std::size_t N>
struct FlatLayoutValues {
  DynRankTuple<N> shape;
  DynRankTuple<N> stride;
};

// Row-major coalescing: extent-1 modes go; an outer mode (s0, d0) absorbs the next inner mode
// (s1, d1) when d0 == s1 * d1. An empty result is the single mode (1):(0).
template <std::size_t N>
TESSEL_HOST_DEVICE constexpr FlatLayoutValues<(N > 0 ? N : 1)> coalesce_values(
    DynRankTuple<N> const& s, DynRankTuple<N> const& d) {
  FlatLayoutValues<(N > 0 ? N : 1)> out{};
  for (index_t k = 0; k < s.rank(); ++k) {
    if (s[k] == 1) continue;
    if (out.shape.rank() > 0 && out.stride.back() == s[k] * d[k]) {
      out.shape.back() *= s[k];
      out.stride.back() = d[k];
    } else {
      out.shape.push_back(s[k]);
      out.stride.push_back(d[k]);
    }
  }
  if (out.shape.rank() == 0) {
    out.shape.push_back(1);
    out.stride.push_back(0);
  }
  return out;
}

// Keeps the modes whose stride is not 0. An empty result is the single mode (1):(0).
template <std::size_t N>
TESSEL_HOST_DEVICE constexpr FlatLayoutValues<(N > 0 ? N : 1)> remove_zero_strides_values(
    DynRankTuple<N> const& s, DynRankTuple<N> const& d) {
  FlatLayoutValues<(N > 0 ? N : 1)> out{};
  for (index_t k = 0; k < s.rank(); ++k) {
    if (d[k] == 0) continue;
    out.shape.push_back(s[k]);
    out.stride.push_back(d[k]);
  }
  if (out.shape.rank() == 0) {
    out.shape.push_back(1);
    out.stride.push_back(0);
  }
  return out;
}

template <class L>
struct CoalesceStatic {
  static constexpr auto value =
      coalesce_values(leaf_values(L{}.shape()), leaf_values(L{}.stride()));
  struct Shape {
    static constexpr auto value = CoalesceStatic::value.shape;
  };
  struct Stride {
    static constexpr auto value = CoalesceStatic::value.stride;
  };
};

// Positions of the non-zero leaves of a static stride type.
template <class D>
struct NonZeroStrideLeaves {
  static constexpr auto value = [] {
    auto d = leaf_values(D{});
    DynRankTuple<max_leaves_v<D>> keep{};
    for (index_t k = 0; k < d.rank(); ++k)
      if (d[k] != 0) keep.push_back(k);
    return keep;
  }();
};

}  // namespace detail

// @post same size and same offset for every 1-D index; flat; no extent-1 mode unless the result
//       is (1):(0); rank <= number of leaves of the input
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto coalesce(L const& l) {
  if constexpr (is_static_v<std::remove_cvref_t<decltype(l.shape())>> &&
                is_static_v<std::remove_cvref_t<decltype(l.stride())>>) {
    using Plan = detail::CoalesceStatic<L>;
    return Layout(detail::lift_flat<typename Plan::Shape>(),
                  detail::lift_flat<typename Plan::Stride>());
  } else {
    auto v = detail::coalesce_values(leaf_values(l.shape()), leaf_values(l.stride()));
    return Layout(v.shape, v.stride);
  }
}

// Drops every stride-0 leaf (the broadcast modes), flattening the layout.
// @post for every kept mode the stride is non-zero; cosize unchanged
template <LayoutType L>
TESSEL_HOST_DEVICE constexpr auto remove_zero_strides(L const& l) {
  using S = std::remove_cvref_t<decltype(l.shape())>;
  using D = std::remove_cvref_t<decltype(l.stride())>;
  if constexpr (is_static_v<D> && !detail::has_dyn_rank<S>::value) {
    // The strides alone decide which modes stay, so run-time extents keep their place.
    using Keep = detail::NonZeroStrideLeaves<D>;
    constexpr std::size_t n = static_cast<std::size_t>(Keep::value.rank());
    if constexpr (n == 0) {
      return Layout(make_tuple(Int<1>{}), make_tuple(Int<0>{}));
    } else {
      auto s = detail::flatten_to_tuple(l.shape());
      auto d = detail::flatten_to_tuple(l.stride());
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return Layout(make_tuple(get<Keep::value[I]>(s)...), make_tuple(get<Keep::value[I]>(d)...));
      }
      (std::make_index_sequence<n>{});
    }
  } else {
    auto v = detail::remove_zero_strides_values(leaf_values(l.shape()), leaf_values(l.stride()));
    return Layout(v.shape, v.stride);
  }
}

}  // namespace tessel
