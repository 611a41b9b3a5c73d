// make_shape / make_stride: build IntTuples from static and run-time integers (and nested tuples).
// Run-time integers of any built-in type are stored as index_t; extents must not be negative.
#pragma once

#include "error.hpp"
#include "int_tuple.hpp"

namespace tessel {

namespace detail {

template <index_t N>
struct StaticExtentCheck {
  static_assert(N >= 0, "tessel: a static extent is negative; extents must be >= 0.");
  static constexpr bool ok = true;
};
template <index_t N>
struct StaticStrideCheck {
  static_assert(N >= 0, "tessel: a static stride is negative; tessel strides must be >= 0.");
  static constexpr bool ok = true;
};

// Run-time integers become index_t; tuples and static integers keep their type.
template <class T>
TESSEL_HOST_DEVICE constexpr auto normalize_int_tuple(T const& x) {
  static_assert(IntTuple<T>,
                "tessel: make_shape and make_stride take integers, Int<N> values and nested "
                "shapes; this argument is none of these.");
  if constexpr (DynamicInt<T>) {
    return static_cast<index_t>(x);
  } else {
    return x;
  }
}

// Static leaves are checked by static_assert; run-time leaves are returned for a host check.
template <template <index_t> class StaticCheck, IntTuple T>
TESSEL_HOST_DEVICE constexpr bool all_leaves_nonnegative(T const& x) {
  bool ok = true;
  for_each_leaf(x, [&](auto v) {
    if constexpr (StaticInt<decltype(v)>) {
      static_assert(StaticCheck<decltype(v)::value>::ok);
    } else {
      if (v < 0) ok = false;
    }
  });
  return ok;
}

}  // namespace detail

// Throws tessel::Error when a run-time extent is negative (static ones fail to compile).
template <IntTuple S>
TESSEL_HOST_DEVICE constexpr void check_extents(S const& s) {
  [[maybe_unused]] bool ok = detail::all_leaves_nonnegative<detail::StaticExtentCheck>(s);
#if !TESSEL_DEVICE_PASS
  if (!ok)
    detail::throw_error(detail::sentence("shape ", detail::shape_text(s),
                                         " has a negative extent; extents must be >= 0."));
#endif
}
// Throws tessel::Error when a run-time stride is negative (static ones fail to compile).
template <IntTuple D>
TESSEL_HOST_DEVICE constexpr void check_strides(D const& d) {
  [[maybe_unused]] bool ok = detail::all_leaves_nonnegative<detail::StaticStrideCheck>(d);
#if !TESSEL_DEVICE_PASS
  if (!ok)
    detail::throw_error(detail::sentence("stride ", detail::shape_text(d),
                                         " has a negative entry; tessel strides must be >= 0."));
#endif
}

// A shape from extents: make_shape(Int<32>{}, n) or nested, make_shape(make_shape(2, 3), 4).
// @post every leaf is >= 0 (tessel::Error or a static_assert otherwise)
template <class... Xs>
TESSEL_HOST_DEVICE constexpr auto make_shape(Xs const&... xs) {
  auto s = make_tuple(detail::normalize_int_tuple(xs)...);
  check_extents(s);
  return s;
}

// A stride tuple: make_stride(n, Int<1>{}).
template <class... Xs>
TESSEL_HOST_DEVICE constexpr auto make_stride(Xs const&... xs) {
  auto d = make_tuple(detail::normalize_int_tuple(xs)...);
  check_strides(d);
  return d;
}

}  // namespace tessel
