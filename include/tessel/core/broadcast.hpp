// Broadcast layouts: stride-0 modes that repeat data without copying it.
//   broadcast_layout(layout, shape)           NumPy broadcasting of a flat layout to a shape
//   block_broadcast_layout(grid, block_shape) element (r, c, ...) reads grid (r / b0, c / b1, ...)
#pragma once

#include "block_layout.hpp"
#include "error.hpp"
#include "layout.hpp"

namespace tessel {

namespace detail {

template <IntTuple T>
TESSEL_HOST_DEVICE constexpr auto as_tuple_for_broadcast(T const& x) {
  if constexpr (Integer<T>) {
    return make_tuple(x);
  } else {
    return x;
  }
}

template <index_t From, index_t To>
struct StaticBroadcastCheck {
  static_assert(From == To || From == 1,
                "tessel: cannot broadcast: an extent differs from the target extent and is not 1 "
                "(values in StaticBroadcastCheck<extent, target>).");
  static constexpr bool ok = true;
};

}  // namespace detail

// NumPy rules, aligned at the last mode: a missing leading mode or an extent-1 mode becomes a
// stride-0 mode of the target extent; equal extents keep their stride. Throws tessel::Error naming
// both shapes otherwise (static_assert when both extents are static).
// @post shape(result) == target; result(x) == layout(x') where x' clamps broadcast coordinates to 0
template <LayoutType L, FlatIntTuple S>
TESSEL_HOST_DEVICE constexpr auto broadcast_layout(L const& l, S const& target_shape) {
  auto target = detail::normalize_int_tuple(target_shape);
  auto ls = detail::as_tuple_for_broadcast(l.shape());
  auto ld = detail::as_tuple_for_broadcast(l.stride());
  using LS = decltype(ls);
  static_assert(FlatIntTuple<LS> && !DynRank<LS> && !DynRank<S>,
                "tessel: broadcast_layout needs flat shapes of static rank.");
  constexpr std::size_t rs = tuple_size_v<LS>;
  constexpr std::size_t rt = tuple_size_v<decltype(target)>;
  static_assert(rs <= rt, "tessel: cannot broadcast a layout to a shape of lower rank.");
  [[maybe_unused]] bool ok = true;
  auto result = [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto mode = [&](auto i) {
      constexpr std::size_t k = decltype(i)::value;
      auto t = get<k>(target);
      if constexpr (k < rt - rs) {
        return make_tuple(t, Int<0>{});
      } else {
        auto e = get<k - (rt - rs)>(ls);
        auto st = get<k - (rt - rs)>(ld);
        if constexpr (StaticInt<decltype(e)> && StaticInt<decltype(t)>) {
          static_assert(detail::StaticBroadcastCheck<decltype(e)::value, decltype(t)::value>::ok);
          if constexpr (decltype(e)::value == decltype(t)::value) {
            return make_tuple(t, st);
          } else {
            return make_tuple(t, Int<0>{});
          }
        } else {
          if (to_index(e) != to_index(t) && to_index(e) != 1) ok = false;
          index_t stride = (to_index(e) == to_index(t)) ? to_index(st) : index_t{0};
          return make_tuple(t, stride);
        }
      }
    };
    auto modes = make_tuple(mode(std::integral_constant<std::size_t, I>{})...);
    return Layout(make_tuple(get<0>(get<I>(modes))...), make_tuple(get<1>(get<I>(modes))...));
  }
  (std::make_index_sequence<rt>{});
#if !TESSEL_DEVICE_PASS
  if (!ok)
    detail::throw_error(detail::sentence("cannot broadcast shape ", detail::shape_text(l.shape()),
                                         " to shape ", detail::shape_text(target), "."));
#endif
  return result;
}

// The layout of `broadcast_block_to_element`: a grid of one value per block, seen at element
// resolution. Mode i is the hierarchical (B_i, b_i) with strides (g_i, 0), so a 1-D index r into
// it reads grid row r / b_i. Nothing is copied.
// @post size(mode i) == B_i * b_i; result(r, c, ...) == grid(r / b0, c / b1, ...)
template <LayoutType G, IntTuple B>
TESSEL_HOST_DEVICE constexpr auto block_broadcast_layout(G const& grid, B const& block_shape) {
  auto b = detail::normalize_int_tuple(block_shape);
  auto gs = grid.shape();
  auto gd = grid.stride();
  static_assert(FlatIntTuple<decltype(gs)> && !DynRank<decltype(gs)> && FlatIntTuple<B>,
                "tessel: block broadcasting needs a flat grid layout and a flat block shape.");
  static_assert(tuple_size_v<decltype(gs)> == tuple_size_v<decltype(b)>,
                "tessel: the block shape's rank differs from the grid's rank.");
  [[maybe_unused]] bool ok = true;
  for_each(b, [&](auto bi) {
    if constexpr (StaticInt<decltype(bi)>) {
      static_assert(decltype(bi)::value > 0, "tessel: block extents must be > 0.");
    } else {
      if (bi <= 0) ok = false;
    }
  });
#if !TESSEL_DEVICE_PASS
  if (!ok)
    detail::throw_error(detail::sentence("block shape ", detail::shape_text(b),
                                         " has an extent <= 0; block extents must be > 0."));
#endif
  return Layout(transform(gs, b, [](auto g, auto bi) { return make_tuple(g, bi); }),
                transform(gd, b, [](auto g, auto) { return make_tuple(g, Int<0>{}); }));
}

}  // namespace tessel
