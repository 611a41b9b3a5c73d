// Arithmetic operators on expressions, tensors and scalars: a + b, a - b, a * b, a / b, -a.
// Operands broadcast (NumPy rules); both sides compute in their promoted type (see element.hpp).
// Integer division is C++'s (truncating; dividing by zero is undefined, as in C++).
#pragma once

#include <utility>

#include "map.hpp"

namespace tessel {

namespace ops {

struct Add {
  template <class A, class B>
  TESSEL_HOST_DEVICE constexpr promote_t<A, B> operator()(A a, B b) const {
    using R = promote_t<A, B>;
    return static_cast<R>(static_cast<R>(a) + static_cast<R>(b));
  }
};
struct Sub {
  template <class A, class B>
  TESSEL_HOST_DEVICE constexpr promote_t<A, B> operator()(A a, B b) const {
    using R = promote_t<A, B>;
    return static_cast<R>(static_cast<R>(a) - static_cast<R>(b));
  }
};
struct Mul {
  template <class A, class B>
  TESSEL_HOST_DEVICE constexpr promote_t<A, B> operator()(A a, B b) const {
    using R = promote_t<A, B>;
    return static_cast<R>(static_cast<R>(a) * static_cast<R>(b));
  }
};
struct Div {
  template <class A, class B>
  TESSEL_HOST_DEVICE constexpr promote_t<A, B> operator()(A a, B b) const {
    using R = promote_t<A, B>;
    return static_cast<R>(static_cast<R>(a) / static_cast<R>(b));
  }
};
struct Negate {
  template <class A>
  TESSEL_HOST_DEVICE constexpr auto operator()(A a) const -> decltype(-a) {
    return -a;
  }
};

}  // namespace ops

template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto operator+(A&& a, B&& b) {
  return detail::make_binary(ops::Add{}, std::forward<A>(a), std::forward<B>(b));
}
template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto operator-(A&& a, B&& b) {
  return detail::make_binary(ops::Sub{}, std::forward<A>(a), std::forward<B>(b));
}
template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto operator*(A&& a, B&& b) {
  return detail::make_binary(ops::Mul{}, std::forward<A>(a), std::forward<B>(b));
}
template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto operator/(A&& a, B&& b) {
  return detail::make_binary(ops::Div{}, std::forward<A>(a), std::forward<B>(b));
}
template <ArrayOperand A>
auto operator-(A&& a) {
  return detail::make_map(ops::Negate{}, std::forward<A>(a));
}

}  // namespace tessel
