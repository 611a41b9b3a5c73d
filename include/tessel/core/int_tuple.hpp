// Integer tuples: the common ground of shapes and strides. An IntTuple is an Integer, a
// tessel::tuple of IntTuples (hierarchical modes), or a DynRankTuple (flat, run-time rank).
// Everything here is static in, static out: a fully static argument gives an Int-typed result.
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "config.hpp"
#include "dyn_rank_tuple.hpp"
#include "error.hpp"
#include "int.hpp"
#include "tuple.hpp"

namespace tessel {

namespace detail {

template <class T>
struct is_dyn_rank_tuple : std::false_type {};
template <std::size_t M>
struct is_dyn_rank_tuple<DynRankTuple<M>> : std::true_type {};

template <class T>
struct is_int_tuple : std::bool_constant<Integer<T>> {};
template <class... Ts>
struct is_int_tuple<tuple<Ts...>> : std::bool_constant<(is_int_tuple<Ts>::value && ...)> {};
template <std::size_t M>
struct is_int_tuple<DynRankTuple<M>> : std::true_type {};

template <class T>
struct is_static : std::bool_constant<StaticInt<T>> {};
template <class... Ts>
struct is_static<tuple<Ts...>> : std::bool_constant<(is_static<Ts>::value && ...)> {};

template <class T>
struct is_flat : std::bool_constant<Integer<T> || is_dyn_rank_tuple<T>::value> {};
template <class... Ts>
struct is_flat<tuple<Ts...>> : std::bool_constant<(Integer<Ts> && ...)> {};

// The most leaves an IntTuple of this type can have (exact unless it holds a DynRankTuple).
template <class T>
struct max_leaves : std::integral_constant<std::size_t, 1> {};
template <class... Ts>
struct max_leaves<tuple<Ts...>>
    : std::integral_constant<std::size_t, (std::size_t{0} + ... + max_leaves<Ts>::value)> {};
template <std::size_t M>
struct max_leaves<DynRankTuple<M>> : std::integral_constant<std::size_t, M> {};

template <class T>
struct has_dyn_rank : std::bool_constant<is_dyn_rank_tuple<T>::value> {};
template <class... Ts>
struct has_dyn_rank<tuple<Ts...>> : std::bool_constant<(has_dyn_rank<Ts>::value || ...)> {};

}  // namespace detail

// An integer or a (possibly nested) tuple of integers.
template <class T>
concept IntTuple = detail::is_int_tuple<std::remove_cvref_t<T>>::value;
// A DynRankTuple of any capacity.
template <class T>
concept DynRank = detail::is_dyn_rank_tuple<std::remove_cvref_t<T>>::value;
// An IntTuple without hierarchical modes.
template <class T>
concept FlatIntTuple = IntTuple<T> && detail::is_flat<std::remove_cvref_t<T>>::value;
// Shapes and strides are IntTuples; the names say which role a parameter plays.
template <class T>
concept Shape = IntTuple<T>;
template <class T>
concept Stride = IntTuple<T>;

// True when every integer in T is an Int<N>: its value is fully known to the compiler.
template <class T>
inline constexpr bool is_static_v = detail::is_static<std::remove_cvref_t<T>>::value;

// Upper bound on the number of leaves of an IntTuple type.
template <class T>
inline constexpr std::size_t max_leaves_v = detail::max_leaves<std::remove_cvref_t<T>>::value;

// ---- rank, get, depth ----

// Number of top-level modes: Int<1> for an integer, Int<N> for a tuple, run-time for a
// DynRankTuple.
template <IntTuple T>
TESSEL_HOST_DEVICE constexpr auto rank(T const& x) {
  if constexpr (Integer<T>) {
    return Int<1>{};
  } else if constexpr (DynRank<T>) {
    return x.rank();
  } else {
    return Int<static_cast<index_t>(tuple_size_v<T>)>{};
  }
}

// An integer is its own single mode.
template <std::size_t I, Integer T>
TESSEL_HOST_DEVICE constexpr T get(T x) {
  static_assert(I == 0, "tessel: get<I> of an integer exists only for I == 0.");
  return x;
}
template <std::size_t I, std::size_t M>
TESSEL_HOST_DEVICE constexpr index_t get(DynRankTuple<M> const& x) {
  return x[static_cast<index_t>(I)];
}

// Nesting depth: 0 for an integer, 1 for a flat tuple, 1 + the deepest mode otherwise.
template <IntTuple T>
TESSEL_HOST_DEVICE constexpr auto depth(T const& x) {
  if constexpr (Integer<T>) {
    return Int<0>{};
  } else if constexpr (DynRank<T>) {
    return Int<1>{};
  } else {
    return fold(x, Int<1>{}, [](auto acc, auto const& m) { return max(acc, depth(m) + Int<1>{}); });
  }
}

// ---- leaves ----

// f(leaf) for every integer in row-major (left-to-right, depth-first) order.
template <IntTuple T, class F>
TESSEL_HOST_DEVICE constexpr void for_each_leaf(T const& x, F&& f) {
  if constexpr (Integer<T>) {
    f(x);
  } else if constexpr (DynRank<T>) {
    for (index_t i = 0; i < x.rank(); ++i) f(x[i]);
  } else {
    for_each(x, [&](auto const& m) { for_each_leaf(m, f); });
  }
}

// The leaves as run-time values. The input for value code that runs on static and dynamic
// arguments alike.
template <IntTuple T>
TESSEL_HOST_DEVICE constexpr DynRankTuple<max_leaves_v<T>> leaf_values(T const& x) {
  DynRankTuple<max_leaves_v<T>> out{};
  for_each_leaf(x, [&](auto v) { out.push_back(to_index(v)); });
  return out;
}

namespace detail {
template <IntTuple T>
TESSEL_HOST_DEVICE constexpr auto flatten_to_tuple(T const& x) {
  if constexpr (Integer<T>) {
    return make_tuple(x);
  } else {
    static_assert(!DynRank<T>, "tessel: internal: flatten_to_tuple of a run-time-rank tuple.");
    return fold(x, tuple<>{},
                [](auto const& acc, auto const& m) { return concat(acc, flatten_to_tuple(m)); });
  }
}
}  // namespace detail

// The leaves as a flat tuple (an integer stays an integer). A tuple holding a run-time-rank mode
// flattens to a DynRankTuple.
template <IntTuple T>
TESSEL_HOST_DEVICE constexpr auto flatten(T const& x) {
  if constexpr (Integer<T> || DynRank<T>) {
    return x;
  } else if constexpr (detail::has_dyn_rank<T>::value) {
    return leaf_values(x);
  } else {
    return detail::flatten_to_tuple(x);
  }
}

// ---- size ----

namespace detail {
template <IntTuple T>
TESSEL_HOST_DEVICE constexpr auto static_product(T const& x) {
  if constexpr (Integer<T>) {
    return x;
  } else {
    return fold(x, Int<1>{}, [](auto acc, auto const& m) { return acc * static_product(m); });
  }
}

// Product of the leaves; sets `overflow` instead of wrapping.
template <IntTuple T>
TESSEL_HOST_DEVICE constexpr index_t checked_product(T const& x, bool& overflow) {
  index_t p = 1;
  bool zero = false;
  for_each_leaf(x, [&](auto v) {
    index_t r = 0;
    if (to_index(v) == 0) zero = true;
    if (detail::mul_overflow(p, to_index(v), r)) overflow = true;
    p = r;
  });
  if (zero) {
    overflow = false;  // a zero extent makes the product 0 whatever came before it
    return 0;
  }
  return p;
}
}  // namespace detail

template <IntTuple T>
std::string to_string(T const& x);

namespace detail {
template <IntTuple T>
std::string shape_text(T const& x);
}  // namespace detail

// Product of all extents (the number of elements). Static for a static argument; a dynamic
// product that overflows int64 throws tessel::Error on the host.
template <IntTuple T>
TESSEL_HOST_DEVICE constexpr auto size(T const& x) {
  if constexpr (is_static_v<T>) {
    return decltype(detail::static_product(x)){};
  } else {
    bool overflow = false;
    index_t p = detail::checked_product(x, overflow);
#if !TESSEL_DEVICE_PASS
    if (overflow)
      detail::throw_error(
          detail::sentence("the size of shape ", detail::shape_text(x), " overflows int64."));
#endif
    return p;
  }
}

// Size of each top-level mode: (size(m0), size(m1), ...).
template <IntTuple T>
TESSEL_HOST_DEVICE constexpr auto product_each(T const& x) {
  if constexpr (Integer<T> || DynRank<T>) {
    return x;
  } else {
    return transform(x, [](auto const& m) { return size(m); });
  }
}

// ---- conversions ----

// A flat IntTuple as std::array<std::int64_t, R>; a constant expression for a static argument.
template <IntTuple T>
TESSEL_HOST_DEVICE constexpr auto to_array(T const& x) {
  static_assert(!DynRank<T>,
                "tessel: to_array needs a rank known at compile time; this tuple's rank is only "
                "known at run time, so use to_vector.");
  static_assert(FlatIntTuple<T>,
                "tessel: to_array needs a flat tuple; flatten(x) or product_each(x) first.");
  std::array<std::int64_t, max_leaves_v<T>> out{};
  std::size_t i = 0;
  for_each_leaf(x, [&](auto v) { out[i++] = to_index(v); });
  return out;
}

// Any flat IntTuple, including run-time-rank results, as std::vector<std::int64_t>.
template <IntTuple T>
std::vector<std::int64_t> to_vector(T const& x) {
  static_assert(FlatIntTuple<T>,
                "tessel: to_vector needs a flat tuple; flatten(x) or product_each(x) first.");
  std::vector<std::int64_t> out;
  for_each_leaf(x, [&](auto v) { out.push_back(to_index(v)); });
  return out;
}

// ---- comparison ----

// Same tree structure (ranks of every node agree).
template <class A, class B>
TESSEL_HOST_DEVICE constexpr bool congruent(A const& a, B const& b) {
  if constexpr (Integer<A> && Integer<B>) {
    return true;
  } else if constexpr (DynRank<A> && DynRank<B>) {
    return a.rank() == b.rank();
  } else if constexpr (Tuple<A> && Tuple<B>) {
    if constexpr (tuple_size_v<A> != tuple_size_v<B>) {
      return false;
    } else {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return (congruent(get<I>(a), get<I>(b)) && ...);
      }
      (std::make_index_sequence<tuple_size_v<A>>{});
    }
  } else {
    return false;
  }
}

// Value equality of two IntTuples of the same structure (static and dynamic integers compare by
// value; a DynRankTuple equals a flat tuple holding the same values).
template <IntTuple A, IntTuple B>
TESSEL_HOST_DEVICE constexpr bool equal(A const& a, B const& b) {
  if constexpr (Integer<A> && Integer<B>) {
    return to_index(a) == to_index(b);
  } else if constexpr (DynRank<A> || DynRank<B>) {
    if constexpr (!FlatIntTuple<A> || !FlatIntTuple<B> || Integer<A> || Integer<B>) {
      return false;
    } else {
      return leaf_values(a) == leaf_values(b) && to_index(rank(a)) == to_index(rank(b));
    }
  } else if constexpr (Tuple<A> && Tuple<B>) {
    if constexpr (tuple_size_v<A> != tuple_size_v<B>) {
      return false;
    } else {
      return [&]<std::size_t... I>(std::index_sequence<I...>) {
        return (equal(get<I>(a), get<I>(b)) && ...);
      }
      (std::make_index_sequence<tuple_size_v<A>>{});
    }
  } else {
    return false;
  }
}

template <class... A, class... B>
requires(IntTuple<tuple<A...>>&& IntTuple<tuple<B...>>) TESSEL_HOST_DEVICE constexpr bool
operator==(tuple<A...> const& a, tuple<B...> const& b) {
  return equal(a, b);
}
template <std::size_t M, class... B>
requires IntTuple<tuple<B...>> TESSEL_HOST_DEVICE constexpr bool operator==(
    DynRankTuple<M> const& a, tuple<B...> const& b) {
  return equal(a, b);
}

// ---- text ----

namespace detail {
// Plain: static integers without their underscore (what error sentences print).
template <bool Plain = false, IntTuple T>
void append_int_tuple(std::string& out, T const& x) {
  if constexpr (StaticInt<T>) {
    if (!Plain) out.push_back('_');
    out.append(std::to_string(T::value));
  } else if constexpr (Integer<T>) {
    out.append(std::to_string(to_index(x)));
  } else if constexpr (DynRank<T>) {
    out.push_back('(');
    for (index_t i = 0; i < x.rank(); ++i) {
      if (i) out.push_back(',');
      out.append(std::to_string(x[i]));
    }
    out.push_back(')');
  } else {
    out.push_back('(');
    for_each_indexed(x, [&](auto i, auto const& m) {
      if (i != 0) out.push_back(',');
      append_int_tuple<Plain>(out, m);
    });
    out.push_back(')');
  }
}
}  // namespace detail

// CuTe-style text: static integers carry a leading underscore, e.g. "(_2,4)".
template <IntTuple T>
std::string to_string(T const& x) {
  std::string out;
  detail::append_int_tuple(out, x);
  return out;
}

namespace detail {

// A shape as every error sentence writes it: "(4,6)", "(5)", "((2,3),4)", "()" — plain numbers,
// whether static or not (to_string marks static ones), the hierarchy kept.
template <IntTuple T>
std::string shape_text(T const& x) {
  std::string out;
  append_int_tuple<true>(out, x);
  return out;
}

// The same for extents held in a container (std::vector, std::array, std::span of integers).
template <class R>
requires(!IntTuple<R> && requires(R const& r) {
  { *std::begin(r) } -> std::convertible_to<index_t>;
  std::end(r);
}) std::string shape_text(R const& extents) {
  std::string out = "(";
  bool first = true;
  for (auto const e : extents) {
    if (!first) out.push_back(',');
    out.append(std::to_string(e));
    first = false;
  }
  out.push_back(')');
  return out;
}

}  // namespace detail

}  // namespace tessel
