// tessel::tuple: a lean heterogeneous tuple for shapes and strides. Empty elements (static
// integers) take no storage, so a fully static layout is an empty object. It is adapted to
// Boost.Hana as a Sequence (see hana_adapter.hpp); tessel's own algorithms here are fold
// expressions, which compile several times faster than Hana's and run in device code.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "config.hpp"

namespace tessel {

namespace detail {

// Empty elements are not stored; get<I> rebuilds them. Non-empty ones are plain members. The leaves
// have no member named get: structured bindings look for one first, and clang rejects a binding
// when the lookup finds several (one per leaf) instead of falling back to tessel::get<I>.
template <std::size_t I, class T, bool Empty = std::is_empty_v<T>>
struct TupleLeaf {
  T value;
};

template <std::size_t I, class T>
struct TupleLeaf<I, T, true> {
  constexpr TupleLeaf() = default;
  TESSEL_HOST_DEVICE constexpr TupleLeaf(T) noexcept {}
};

template <class Indices, class... Ts>
struct TupleBase;

template <std::size_t... I, class... Ts>
struct TupleBase<std::index_sequence<I...>, Ts...> : TupleLeaf<I, Ts>... {
  constexpr TupleBase() = default;
  TESSEL_HOST_DEVICE constexpr TupleBase(std::in_place_t, Ts const&... xs)
      : TupleLeaf<I, Ts>{xs}... {}
};

}  // namespace detail

template <class... Ts>
struct tuple : detail::TupleBase<std::index_sequence_for<Ts...>, Ts...> {
  using Base = detail::TupleBase<std::index_sequence_for<Ts...>, Ts...>;
  constexpr tuple() = default;
  template <class... Us>
  requires(sizeof...(Us) == sizeof...(Ts) && sizeof...(Ts) > 0 &&
           (std::is_convertible_v<Us const&, Ts> && ...)) TESSEL_HOST_DEVICE
      constexpr tuple(Us const&... xs)
      : Base(std::in_place, static_cast<Ts>(xs)...) {}
};

template <class... Ts>
tuple(Ts...) -> tuple<Ts...>;

namespace detail {
template <class T>
struct is_tuple : std::false_type {};
template <class... Ts>
struct is_tuple<tuple<Ts...>> : std::true_type {};
}  // namespace detail

// A tessel::tuple of anything.
template <class T>
concept Tuple = detail::is_tuple<std::remove_cvref_t<T>>::value;

template <class... Ts>
TESSEL_HOST_DEVICE constexpr tuple<Ts...> make_tuple(Ts const&... xs) {
  return tuple<Ts...>(xs...);
}

template <class T>
inline constexpr std::size_t tuple_size_v = std::tuple_size<std::remove_cvref_t<T>>::value;

namespace detail {
template <std::size_t I, class T>
TESSEL_HOST_DEVICE constexpr T const& leaf_get(TupleLeaf<I, T, false> const& leaf) {
  return leaf.value;
}
template <std::size_t I, class T>
TESSEL_HOST_DEVICE constexpr T& leaf_get(TupleLeaf<I, T, false>& leaf) {
  return leaf.value;
}
template <std::size_t I, class T>
TESSEL_HOST_DEVICE constexpr T leaf_get(TupleLeaf<I, T, true> const&) {
  return T{};
}
}  // namespace detail

// The I-th element (a reference when it is stored, a fresh value when it is empty).
template <std::size_t I, class... Ts>
TESSEL_HOST_DEVICE constexpr decltype(auto) get(tuple<Ts...> const& t) {
  static_assert(I < sizeof...(Ts), "tessel: get<I> is out of range for this tuple.");
  return detail::leaf_get<I>(t);
}
template <std::size_t I, class... Ts>
TESSEL_HOST_DEVICE constexpr decltype(auto) get(tuple<Ts...>& t) {
  static_assert(I < sizeof...(Ts), "tessel: get<I> is out of range for this tuple.");
  return detail::leaf_get<I>(t);
}
template <std::size_t I, class... Ts>
TESSEL_HOST_DEVICE constexpr auto get(tuple<Ts...>&& t) {
  static_assert(I < sizeof...(Ts), "tessel: get<I> is out of range for this tuple.");
  return detail::leaf_get<I>(t);
}

// ---- algorithms (fold expressions; all usable in device code) ----

// f(x0, x1, ...)
template <Tuple T, class F>
TESSEL_HOST_DEVICE constexpr decltype(auto) apply(T const& t, F&& f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>)->decltype(auto) {
    return f(get<I>(t)...);
  }
  (std::make_index_sequence<tuple_size_v<T>>{});
}

// (f(x0), f(x1), ...)
template <Tuple T, class F>
TESSEL_HOST_DEVICE constexpr auto transform(T const& t, F&& f) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_tuple(f(get<I>(t))...);
  }
  (std::make_index_sequence<tuple_size_v<T>>{});
}

// (f(a0, b0), f(a1, b1), ...); the two tuples have the same size.
template <Tuple A, Tuple B, class F>
TESSEL_HOST_DEVICE constexpr auto transform(A const& a, B const& b, F&& f) {
  static_assert(tuple_size_v<A> == tuple_size_v<B>,
                "tessel: transform over two tuples of different sizes.");
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_tuple(f(get<I>(a), get<I>(b))...);
  }
  (std::make_index_sequence<tuple_size_v<A>>{});
}

// f(x0); f(x1); ... in order.
template <Tuple T, class F>
TESSEL_HOST_DEVICE constexpr void for_each(T const& t, F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(get<I>(t)), ...);
  }
  (std::make_index_sequence<tuple_size_v<T>>{});
}

// f(Int-like index, x_i) in order; the index is a std::integral_constant.
template <Tuple T, class F>
TESSEL_HOST_DEVICE constexpr void for_each_indexed(T const& t, F&& f) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (f(std::integral_constant<std::size_t, I>{}, get<I>(t)), ...);
  }
  (std::make_index_sequence<tuple_size_v<T>>{});
}

namespace detail {
template <class F, class Acc>
TESSEL_HOST_DEVICE constexpr auto fold_step(F&, Acc acc) {
  return acc;
}
template <class F, class Acc, class X, class... Xs>
TESSEL_HOST_DEVICE constexpr auto fold_step(F& f, Acc acc, X const& x, Xs const&... xs) {
  return detail::fold_step(f, f(acc, x), xs...);
}

}  // namespace detail

// f(...f(f(init, x0), x1)..., xn-1)
template <Tuple T, class Init, class F>
TESSEL_HOST_DEVICE constexpr auto fold(T const& t, Init init, F&& f) {
  if constexpr (tuple_size_v<T> == 0) {
    return init;
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return detail::fold_step(f, init, get<I>(t)...);
    }
    (std::make_index_sequence<tuple_size_v<T>>{});
  }
}

// Concatenation of two tuples.
template <Tuple A, Tuple B>
TESSEL_HOST_DEVICE constexpr auto concat(A const& a, B const& b) {
  return [&]<std::size_t... I, std::size_t... J>(std::index_sequence<I...>,
                                                 std::index_sequence<J...>) {
    return make_tuple(get<I>(a)..., get<J>(b)...);
  }
  (std::make_index_sequence<tuple_size_v<A>>{}, std::make_index_sequence<tuple_size_v<B>>{});
}

template <Tuple A, class X>
TESSEL_HOST_DEVICE constexpr auto append(A const& a, X const& x) {
  return concat(a, make_tuple(x));
}
template <Tuple A, class X>
TESSEL_HOST_DEVICE constexpr auto prepend(A const& a, X const& x) {
  return concat(make_tuple(x), a);
}

template <Tuple T>
TESSEL_HOST_DEVICE constexpr auto reverse(T const& t) {
  constexpr std::size_t n = tuple_size_v<T>;
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_tuple(get<n - 1 - I>(t)...);
  }
  (std::make_index_sequence<n>{});
}

// The elements at the given positions, in that order.
template <std::size_t... I, Tuple T>
TESSEL_HOST_DEVICE constexpr auto select(T const& t) {
  static_assert(((I < tuple_size_v<T>)&&...),
                "tessel: select<I...> names a position past the end of the tuple.");
  return make_tuple(get<I>(t)...);
}

// Elements [B, E).
template <std::size_t B, std::size_t E, Tuple T>
TESSEL_HOST_DEVICE constexpr auto take(T const& t) {
  static_assert(B <= E && E <= tuple_size_v<T>, "tessel: take<B, E> is out of range.");
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return make_tuple(get<B + I>(t)...);
  }
  (std::make_index_sequence<E - B>{});
}

}  // namespace tessel

// Structured bindings: auto [m, n] = shape;
template <class... Ts>
struct std::tuple_size<tessel::tuple<Ts...>> : std::integral_constant<std::size_t, sizeof...(Ts)> {
};
template <std::size_t I, class... Ts>
struct std::tuple_element<I, tessel::tuple<Ts...>> {
  using type = std::tuple_element_t<I, std::tuple<Ts...>>;
};
