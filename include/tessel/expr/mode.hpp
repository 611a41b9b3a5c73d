// Naming the mode a reduction or row operation works over: mode<1>, mode<-1> (the last mode), and
// whether a reduced mode is kept with extent 1 (keep) or dropped (drop, the default).
#pragma once

#include <cstddef>
#include <type_traits>

namespace tessel {

// Mode I of an expression; negative I counts from the end (mode<-1> is the last, fastest mode).
template <int I>
struct Mode {
  static constexpr int value = I;
};
template <int I>
inline constexpr Mode<I> mode{};

// A reduced mode stays, with extent 1 (so the result broadcasts against the input).
struct Keep {};
inline constexpr Keep keep{};
// A reduced mode is removed from the result's shape.
struct Drop {};
inline constexpr Drop drop{};

namespace detail {

template <int I, std::size_t R>
struct ModeCheck {
  static_assert(I >= -static_cast<int>(R) && I < static_cast<int>(R),
                "tessel: mode<I> names a mode the expression does not have (values in "
                "ModeCheck<I, rank>).");
  static constexpr std::size_t value =
      static_cast<std::size_t>(I < 0 ? I + static_cast<int>(R) : I);
};

// mode<I> of a rank-R expression as a position 0 <= value < R.
template <int I, std::size_t R>
inline constexpr std::size_t normalize_mode = ModeCheck<I, R>::value;

template <class K>
inline constexpr bool is_keep_v = std::is_same_v<K, Keep>;

}  // namespace detail

}  // namespace tessel
