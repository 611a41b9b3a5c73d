// Static integers (Int<N>, a type per value) and run-time integers, with arithmetic that stays
// static whenever both operands are static.
#pragma once

#include <concepts>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "config.hpp"

namespace tessel {

// A compile-time integer. Int<N>{} is empty; arithmetic and comparison between two Ints give
// an Int, so static extents stay in the type system through any layout computation.
template <index_t N>
struct Int {
  using value_type = index_t;
  static constexpr index_t value = N;

  TESSEL_HOST_DEVICE constexpr operator index_t() const noexcept { return N; }
  TESSEL_HOST_DEVICE explicit constexpr operator bool() const noexcept { return N != 0; }
};

namespace detail {
template <class T>
struct is_static_int : std::false_type {};
template <index_t N>
struct is_static_int<Int<N>> : std::true_type {};
}  // namespace detail

// An Int<N>.
template <class T>
concept StaticInt = detail::is_static_int<std::remove_cvref_t<T>>::value;

// A run-time integer (any built-in integer type but bool).
template <class T>
concept DynamicInt =
    std::integral<std::remove_cvref_t<T>> && !std::same_as<std::remove_cvref_t<T>, bool>;

// Either kind of integer.
template <class T>
concept Integer = StaticInt<T> || DynamicInt<T>;

// The value of any Integer as index_t.
template <Integer T>
TESSEL_HOST_DEVICE constexpr index_t to_index(T x) noexcept {
  return static_cast<index_t>(x);
}

namespace detail {

// Portable overflow tests (nvcc's front end does not evaluate __builtin_*_overflow in constant
// expressions).
inline constexpr index_t index_max = std::numeric_limits<index_t>::max();
inline constexpr index_t index_min = std::numeric_limits<index_t>::min();

TESSEL_HOST_DEVICE constexpr bool add_overflows(index_t a, index_t b) {
  return (b > 0 && a > index_max - b) || (b < 0 && a < index_min - b);
}
TESSEL_HOST_DEVICE constexpr bool sub_overflows(index_t a, index_t b) {
  return (b < 0 && a > index_max + b) || (b > 0 && a < index_min + b);
}
TESSEL_HOST_DEVICE constexpr bool mul_overflows(index_t a, index_t b) {
  if (a == 0 || b == 0) return false;
  if (a > 0) return b > 0 ? a > index_max / b : b < index_min / a;
  return b > 0 ? a < index_min / b : b < index_max / a;
}

// a * b into r; returns true (and leaves r unspecified) on overflow.
TESSEL_HOST_DEVICE constexpr bool mul_overflow(index_t a, index_t b, index_t& r) {
  if (mul_overflows(a, b)) return true;
  r = a * b;
  return false;
}
TESSEL_HOST_DEVICE constexpr bool add_overflow(index_t a, index_t b, index_t& r) {
  if (add_overflows(a, b)) return true;
  r = a + b;
  return false;
}

// Each check is a class template so that a failure prints the offending values in the
// "required from" line of the diagnostic, below the sentence.
template <index_t A, index_t B>
struct StaticSumCheck {
  static_assert(!add_overflows(A, B), "tessel: the sum of two static integers overflows int64.");
  static constexpr index_t value = A + B;
};
template <index_t A, index_t B>
struct StaticDifferenceCheck {
  static_assert(!sub_overflows(A, B),
                "tessel: the difference of two static integers overflows int64.");
  static constexpr index_t value = A - B;
};
template <index_t A, index_t B>
struct StaticProductCheck {
  static_assert(!mul_overflows(A, B),
                "tessel: the product of two static integers overflows int64.");
  static constexpr index_t value = A * B;
};
template <index_t A, index_t B>
struct StaticDivisorCheck {
  static_assert(B != 0, "tessel: a static integer is divided by static zero.");
  static constexpr index_t quotient = A / B;
  static constexpr index_t remainder = A % B;
};

}  // namespace detail

template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr auto operator+(Int<A>, Int<B>) {
  return Int<detail::StaticSumCheck<A, B>::value>{};
}
template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr auto operator-(Int<A>, Int<B>) {
  return Int<detail::StaticDifferenceCheck<A, B>::value>{};
}
template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr auto operator*(Int<A>, Int<B>) {
  return Int<detail::StaticProductCheck<A, B>::value>{};
}
template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr auto operator/(Int<A>, Int<B>) {
  return Int<detail::StaticDivisorCheck<A, B>::quotient>{};
}
template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr auto operator%(Int<A>, Int<B>) {
  return Int<detail::StaticDivisorCheck<A, B>::remainder>{};
}
template <index_t A>
TESSEL_HOST_DEVICE constexpr auto operator-(Int<A>) {
  return Int<detail::StaticDifferenceCheck<0, A>::value>{};
}

template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr Int<(A == B)> operator==(Int<A>, Int<B>) {
  return {};
}
template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr Int<(A != B)> operator!=(Int<A>, Int<B>) {
  return {};
}
template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr Int<(A < B)> operator<(Int<A>, Int<B>) {
  return {};
}
template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr Int<(A <= B)> operator<=(Int<A>, Int<B>) {
  return {};
}
template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr Int<(A > B)> operator>(Int<A>, Int<B>) {
  return {};
}
template <index_t A, index_t B>
TESSEL_HOST_DEVICE constexpr Int<(A >= B)> operator>=(Int<A>, Int<B>) {
  return {};
}

// Identities that keep a result static although one operand is dynamic: a stride-0 (broadcast)
// mode stays visibly stride 0, and multiplying by a static 1 keeps the other operand's type.
template <DynamicInt T>
TESSEL_HOST_DEVICE constexpr Int<0> operator*(Int<0>, T) {
  return {};
}
template <DynamicInt T>
TESSEL_HOST_DEVICE constexpr Int<0> operator*(T, Int<0>) {
  return {};
}
template <DynamicInt T>
TESSEL_HOST_DEVICE constexpr T operator*(Int<1>, T x) {
  return x;
}
template <DynamicInt T>
TESSEL_HOST_DEVICE constexpr T operator*(T x, Int<1>) {
  return x;
}
template <DynamicInt T>
TESSEL_HOST_DEVICE constexpr T operator+(Int<0>, T x) {
  return x;
}
template <DynamicInt T>
TESSEL_HOST_DEVICE constexpr T operator+(T x, Int<0>) {
  return x;
}
template <DynamicInt T>
TESSEL_HOST_DEVICE constexpr T operator/(T x, Int<1>) {
  return x;
}

// min, max and ceil_div, static when both arguments are.
template <Integer A, Integer B>
TESSEL_HOST_DEVICE constexpr auto min(A a, B b) {
  if constexpr (StaticInt<A> && StaticInt<B>) {
    return Int<(A::value < B::value ? A::value : B::value)>{};
  } else {
    return to_index(a) < to_index(b) ? to_index(a) : to_index(b);
  }
}
template <Integer A, Integer B>
TESSEL_HOST_DEVICE constexpr auto max(A a, B b) {
  if constexpr (StaticInt<A> && StaticInt<B>) {
    return Int<(A::value < B::value ? B::value : A::value)>{};
  } else {
    return to_index(a) < to_index(b) ? to_index(b) : to_index(a);
  }
}
// @pre b > 0, a >= 0
template <Integer A, Integer B>
TESSEL_HOST_DEVICE constexpr auto ceil_div(A a, B b) {
  if constexpr (StaticInt<A> && StaticInt<B>) {
    return Int<(detail::StaticDivisorCheck<A::value, B::value>::quotient +
                (A::value % B::value != 0 ? 1 : 0))>{};
  } else {
    return (to_index(a) + to_index(b) - 1) / to_index(b);
  }
}

namespace detail {
template <char... Digits>
constexpr index_t parse_decimal() {
  index_t value = 0;
  ((value = value * 10 + (Digits - '0')), ...);
  return value;
}
}  // namespace detail

namespace literals {

// 4_c is Int<4>{}: static extents read like numbers in user code.
template <char... Digits>
constexpr auto operator""_c() {
  static_assert(((Digits >= '0' && Digits <= '9') && ...),
                "tessel: _c takes a plain decimal literal such as 128_c.");
  return Int<tessel::detail::parse_decimal<Digits...>()>{};
}

}  // namespace literals

}  // namespace tessel
