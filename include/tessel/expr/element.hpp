// Element types in expressions: which types a tensor or scalar operand may hold, the type each is
// computed in (half and bfloat16 are storage types computed in float), how values are loaded and
// stored, and how the types of two operands combine.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../core/config.hpp"
#include "../core/float16.hpp"

namespace tessel {

namespace detail {
template <class T>
inline constexpr bool is_storage_float_v =
    std::is_same_v<std::remove_cv_t<T>, half> || std::is_same_v<std::remove_cv_t<T>, bfloat16>;
}  // namespace detail

// A 2-byte floating-point storage type (tessel::half, tessel::bfloat16).
template <class T>
concept StorageFloat = detail::is_storage_float_v<T>;

// An element type expressions read and write: a built-in arithmetic type or a storage float.
template <class T>
concept Element = std::is_arithmetic_v<std::remove_cv_t<T>> || StorageFloat<T>;

namespace detail {
template <class T>
struct compute_type {
  using type = std::remove_cv_t<T>;
};
template <StorageFloat T>
struct compute_type<T> {
  using type = float;
};
}  // namespace detail

// The type an element of type T is computed in: float for half and bfloat16, T otherwise.
template <Element T>
using compute_t = typename detail::compute_type<T>::type;

// The value of a stored element, in its compute type (exact).
template <Element T>
TESSEL_HOST_DEVICE constexpr compute_t<T> load_element(T const& x) noexcept {
  if constexpr (StorageFloat<T>) {
    return static_cast<float>(x);
  } else {
    return x;
  }
}

// A computed value stored as T: rounded to nearest even for half / bfloat16 (through float), a
// C++ conversion otherwise.
template <Element T, class V>
TESSEL_HOST_DEVICE constexpr std::remove_cv_t<T> store_element(V const& v) noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (StorageFloat<U>) {
    return U(static_cast<float>(v));
  } else if constexpr (std::is_same_v<U, bool>) {
    return v != V{};
  } else {
    return static_cast<U>(v);
  }
}

namespace detail {

// Two compute types combine as C++'s usual arithmetic conversions do, except that bool adopts the
// other type (a mask times a float stays a float, not an int).
template <class A, class B>
struct promote {
  using type = std::common_type_t<A, B>;
};
template <class A>
struct promote<A, A> {
  using type = A;
};
template <class B>
requires(!std::is_same_v<B, bool>) struct promote<bool, B> {
  using type = B;
};
template <class A>
requires(!std::is_same_v<A, bool>) struct promote<A, bool> {
  using type = A;
};

// A scalar next to an expression of compute type E does not widen it (x_f32 * 2.0 stays f32,
// as in NumPy and PyTorch) unless it brings floating point to an integer or bool expression.
template <class E, class S>
struct promote_scalar {
  using type = std::conditional_t<std::is_same_v<E, bool> ||
                                      (std::is_floating_point_v<S> && !std::is_floating_point_v<E>),
                                  S, E>;
};

}  // namespace detail

// The compute type of an arithmetic operation between compute types A and B.
template <class A, class B>
using promote_t = typename detail::promote<A, B>::type;

// The type a scalar of compute type S takes next to an expression of compute type E.
template <class E, class S>
using promote_scalar_t = typename detail::promote_scalar<E, S>::type;

// The type transcendental functions of a T compute in: T when floating, double for integers
// (as std::exp(int) does).
template <class T>
using floating_t = std::conditional_t<std::is_floating_point_v<T>, T, double>;

}  // namespace tessel
