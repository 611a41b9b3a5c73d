// Reductions: sum, max, min, mean, argmax and logsumexp over one mode (mode<I>, the mode kept with
// extent 1 or dropped) or over every mode. A reduction is an expression node like any other, so
// exp(x - logsumexp(x, mode<1>, keep)) composes; see docs/expressions.md for when a reduction
// inside a larger expression is evaluated into a temporary first.
//
//   sum      integers accumulate in 64 bits; floats in their own type
//   max/min  NaN propagates; an empty mode is an error when evaluated
//   mean     in the floating type (double for integers); NaN over an empty mode
//   argmax   the lowest index of the maximum (a NaN counts as the maximum, as in PyTorch)
//   logsumexp  log(sum(exp(x))) in one pass with online max-and-sum rescaling: exact for large
//              |x|, -inf for an all -inf (or empty) mode, +inf if any element is +inf
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "leaf.hpp"
#include "mode.hpp"

namespace tessel {

// The reduction kinds (tags; exec/body/reduce_ops.hpp has their arithmetic). Each says what
// every executor needs to know of it: its name in sentences, and whether it has a value over no
// elements (sum 0, mean NaN, logsumexp -inf) or must refuse an empty mode (max, min, argmax).
namespace reduction {
struct Sum {
  static constexpr char const* name = "sum";
  static constexpr bool defined_when_empty = true;
};
struct Max {
  static constexpr char const* name = "max";
  static constexpr bool defined_when_empty = false;
};
struct Min {
  static constexpr char const* name = "min";
  static constexpr bool defined_when_empty = false;
};
struct Mean {
  static constexpr char const* name = "mean";
  static constexpr bool defined_when_empty = true;
};
struct Argmax {
  static constexpr char const* name = "argmax";
  static constexpr bool defined_when_empty = false;
};
struct LogSumExp {
  static constexpr char const* name = "logsumexp";
  static constexpr bool defined_when_empty = true;
};
}  // namespace reduction

namespace detail {

template <class Kind, class T>
struct reduce_result {
  using type = T;  // max, min
};
template <class T>
struct reduce_result<reduction::Sum, T> {
  using type =
      std::conditional_t<std::is_floating_point_v<T>, T,
                         std::conditional_t<std::is_unsigned_v<T> && !std::is_same_v<T, bool>,
                                            std::uint64_t, std::int64_t>>;
};
template <class T>
struct reduce_result<reduction::Mean, T> {
  using type = floating_t<T>;
};
template <class T>
struct reduce_result<reduction::Argmax, T> {
  using type = index_t;
};
template <class T>
struct reduce_result<reduction::LogSumExp, T> {
  using type = floating_t<T>;
};

// The axis value meaning "every mode".
inline constexpr std::size_t all_modes = static_cast<std::size_t>(-1);

// Kind over mode Axis of the input (or over every mode when Axis == all_modes).
template <class Kind, Expression E, std::size_t Axis, bool Keep>
struct Reduce : ExprBase {
  using kind = Kind;
  using input_type = E;
  using value_type = typename reduce_result<Kind, typename E::value_type>::type;
  static constexpr bool over_all = Axis == all_modes;
  static constexpr std::size_t axis = Axis;
  static constexpr bool keeps_mode = Keep;
  static constexpr std::size_t rank = Keep ? E::rank : (over_all ? 0 : E::rank - 1);

  E input;
  ExprShape<rank> extents;

  explicit Reduce(E const& e) : input(e), extents{} {
    auto const& in = e.shape();
    std::size_t t = 0;
    for (std::size_t k = 0; k != E::rank; ++k) {
      bool reduced = over_all || k == Axis;
      if (!reduced)
        extents[t++] = in[k];
      else if (Keep)
        extents[t++] = 1;
    }
  }
  ExprShape<rank> const& shape() const noexcept { return extents; }
};

template <class T>
struct is_reduce_arg : std::false_type {};
template <int I>
struct is_reduce_arg<Mode<I>> : std::true_type {};
template <>
struct is_reduce_arg<Keep> : std::true_type {};
template <>
struct is_reduce_arg<Drop> : std::true_type {};

template <class... Args>
struct ReduceArgs {
  static constexpr bool valid = false;
};
template <>
struct ReduceArgs<> {
  static constexpr bool valid = true;
  static constexpr bool all = true;
  static constexpr bool keep = false;
  static constexpr int mode = 0;
};
template <int I>
struct ReduceArgs<Mode<I>> {
  static constexpr bool valid = true;
  static constexpr bool all = false;
  static constexpr bool keep = false;
  static constexpr int mode = I;
};
template <int I, class K>
requires(std::is_same_v<K, Keep> || std::is_same_v<K, Drop>) struct ReduceArgs<Mode<I>, K> {
  static constexpr bool valid = true;
  static constexpr bool all = false;
  static constexpr bool keep = std::is_same_v<K, Keep>;
  static constexpr int mode = I;
};
template <class K>
requires(std::is_same_v<K, Keep> || std::is_same_v<K, Drop>) struct ReduceArgs<K> {
  static constexpr bool valid = true;
  static constexpr bool all = true;
  static constexpr bool keep = std::is_same_v<K, Keep>;
  static constexpr int mode = 0;
};

template <class Kind, class X, class... Args>
auto make_reduce(X&& x) {
  using A = ReduceArgs<Args...>;
  auto e = as_expr(std::forward<X>(x));
  using E = decltype(e);
  if constexpr (A::all) {
    return Reduce<Kind, E, all_modes, A::keep>(e);
  } else {
    static_assert(E::rank > 0, "tessel: a rank-0 expression has no mode to reduce over.");
    return Reduce<Kind, E, normalize_mode<A::mode, E::rank>, A::keep>(e);
  }
}

}  // namespace detail

// The reduction arguments: nothing (every mode, dropped), keep (every mode, kept with extent 1),
// mode<I>, or mode<I> followed by keep or drop.
template <class... Args>
concept ReductionArgs = detail::ReduceArgs<std::remove_cvref_t<Args>...>::valid;

template <ArrayOperand X, class... Args>
requires ReductionArgs<Args...>
auto sum(X&& x, Args...) {
  return detail::make_reduce<reduction::Sum, X, Args...>(std::forward<X>(x));
}
template <ArrayOperand X, class... Args>
requires ReductionArgs<Args...>
auto max(X&& x, Args...) {
  return detail::make_reduce<reduction::Max, X, Args...>(std::forward<X>(x));
}
template <ArrayOperand X, class... Args>
requires ReductionArgs<Args...>
auto min(X&& x, Args...) {
  return detail::make_reduce<reduction::Min, X, Args...>(std::forward<X>(x));
}
template <ArrayOperand X, class... Args>
requires ReductionArgs<Args...>
auto mean(X&& x, Args...) {
  return detail::make_reduce<reduction::Mean, X, Args...>(std::forward<X>(x));
}
template <ArrayOperand X, class... Args>
requires ReductionArgs<Args...>
auto argmax(X&& x, Args...) {
  return detail::make_reduce<reduction::Argmax, X, Args...>(std::forward<X>(x));
}
template <ArrayOperand X, class... Args>
requires ReductionArgs<Args...>
auto logsumexp(X&& x, Args...) {
  return detail::make_reduce<reduction::LogSumExp, X, Args...>(std::forward<X>(x));
}

}  // namespace tessel
