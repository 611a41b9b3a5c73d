// N:M structured sparsity patterns (2:4, 4:8, ...): in every group of M consecutive elements
// along one mode, at most N are nonzero. For a weight of shape (out, in) the PyTorch/cuSPARSELt
// convention groups along the input dimension, the last mode, which is tessel's default.
// NMPattern<Int<2>, Int<4>> is a pattern known at compile time: its groups, and the grids of
// tensors with static shapes, are then static shapes.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

#include "../core/error.hpp"
#include "../core/int.hpp"
#include "../core/tuple.hpp"

namespace tessel {

namespace detail {

template <index_t N, index_t M>
struct StaticNMCheck {
  static_assert(M > 0, "tessel: an N:M pattern needs a group size M > 0.");
  static_assert(N >= 0 && N <= M,
                "tessel: an N:M pattern keeps 0 <= N <= M elements per group (values in "
                "StaticNMCheck<N, M>).");
  static constexpr bool ok = true;
};

template <class N, class M>
constexpr bool check_static_nm() {
  if constexpr (StaticInt<N> && StaticInt<M>) {
    return StaticNMCheck<N::value, M::value>::ok;
  } else {
    return true;
  }
}

template <class T>
using normalized_int_t = std::conditional_t<StaticInt<T>, T, index_t>;

}  // namespace detail

// At most n nonzero elements in every group of m consecutive elements along a mode.
// NMPattern{2, 4} holds run-time integers; NMPattern<Int<2>, Int<4>>{} is static (a static pattern
// with n > m or m <= 0 fails to compile; a run-time one throws tessel::Error where it is used).
template <Integer N, Integer M>
struct NMPattern {
  static_assert(detail::check_static_nm<N, M>());
  static constexpr bool is_static = StaticInt<N> && StaticInt<M>;

  [[no_unique_address]] N n{};
  [[no_unique_address]] M m{};
};

template <Integer N, Integer M>
NMPattern(N, M) -> NMPattern<detail::normalized_int_t<N>, detail::normalized_int_t<M>>;

namespace detail {
template <class T>
struct is_nm_pattern : std::false_type {};
template <class N, class M>
struct is_nm_pattern<NMPattern<N, M>> : std::true_type {};
}  // namespace detail

// Any NMPattern.
template <class T>
concept NMPatternType = detail::is_nm_pattern<std::remove_cvref_t<T>>::value;

// "2:4".
template <class N, class M>
std::string to_string(NMPattern<N, M> const& p) {
  return std::to_string(to_index(p.n)) + ":" + std::to_string(to_index(p.m));
}
template <class N, class M>
std::ostream& operator<<(std::ostream& os, NMPattern<N, M> const& p) {
  return os << to_string(p);
}

namespace detail {

// Run-time validation of a pattern, before it is used.
template <class N, class M>
void check_pattern(NMPattern<N, M> const& p) {
  index_t n = to_index(p.n), m = to_index(p.m);
  if (m <= 0 || n < 0 || n > m)
    throw_error(
        sentence("N:M pattern ", n, ":", m, " is invalid; it needs 0 <= N <= M and M > 0."));
}

// The mode a pattern runs along: Mode, or rank + Mode for a negative Mode (-1: the last mode).
template <int Mode, std::size_t R>
constexpr std::size_t resolve_mode() {
  static_assert(Mode >= -static_cast<int>(R) && Mode < static_cast<int>(R),
                "tessel: the N:M mode is out of range for the tensor's rank.");
  return Mode < 0 ? static_cast<std::size_t>(static_cast<int>(R) + Mode)
                  : static_cast<std::size_t>(Mode);
}

}  // namespace detail

// The group of an N:M pattern along mode Mode of a rank-R tensor: M at that mode, Int<1>
// elsewhere, e.g. (_1, _4) for 2:4 along the last mode of a matrix; static when M is.
template <int Mode, std::size_t R, class N, class M>
constexpr auto nm_group_shape(NMPattern<N, M> const& p) {
  constexpr std::size_t mode = detail::resolve_mode<Mode, R>();
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    auto one = [&](auto i) {
      if constexpr (decltype(i)::value == mode) {
        return p.m;
      } else {
        return Int<1>{};
      }
    };
    return make_tuple(one(std::integral_constant<std::size_t, I>{})...);
  }
  (std::make_index_sequence<R>{});
}

}  // namespace tessel
