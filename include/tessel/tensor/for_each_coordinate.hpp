// for_each_coordinate(shape, f): the sequential host loop over every coordinate of a shape, in
// row-major order, for reference code and copies (materialize); nothing here is meant to be fast.
// Work that should be fast, or run on a GPU, goes through an executor (tessel::assign,
// exec::for_each_row).
#pragma once

#include <array>
#include <cstddef>
#include <utility>

#include "../core/int_tuple.hpp"

namespace tessel {

namespace detail {
template <IntTuple S>
constexpr auto as_mode_tuple(S const& s) {
  if constexpr (Integer<S>) {
    return make_tuple(s);
  } else {
    return s;
  }
}
// t(c[0], c[1], ...) for a coordinate held in an array.
template <class T, std::size_t R>
decltype(auto) at_coordinate(T const& t, std::array<index_t, R> const& c) {
  return [&]<std::size_t... I>(std::index_sequence<I...>)->decltype(auto) {
    return t(c[I]...);
  }
  (std::make_index_sequence<R>{});
}

}  // namespace detail

// Calls f(i0, i1, ...) (index_t arguments, one per top-level mode) for every coordinate of shape,
// the last coordinate fastest. A hierarchical mode gets one 1-D index into it, as t(i, j) does.
// A shape with an extent 0 makes no call; the rank-0 shape () makes one call f().
// @pre the rank of shape is known at compile time
template <IntTuple S, class F>
void for_each_coordinate(S const& shape, F&& f) {
  static_assert(!DynRank<S>,
                "tessel: for_each_coordinate needs a shape whose rank is known at compile time.");
  auto modes = detail::as_mode_tuple(shape);
  constexpr std::size_t r = tuple_size_v<decltype(modes)>;
  if constexpr (r == 0) {
    f();
  } else {
    std::array<index_t, r> extent{};
    for_each_indexed(
        modes, [&](auto i, auto const& m) { extent[decltype(i)::value] = to_index(size(m)); });
    for (index_t e : extent)
      if (e == 0) return;
    std::array<index_t, r> c{};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      for (;;) {
        f(c[I]...);
        std::size_t k = r;
        for (;;) {  // odometer: bump the last coordinate, carry into the ones before it
          --k;
          if (++c[k] < extent[k]) break;
          if (k == 0) return;
          c[k] = 0;
        }
      }
    }
    (std::make_index_sequence<r>{});
  }
}

}  // namespace tessel
