// Comparisons of broadcast operands, giving boolean expressions: a == b, a != b, a < b, a <= b,
// a > b, a >= b. Both sides are compared in their promoted type; comparisons with NaN are false
// except !=.
#pragma once

#include <utility>

#include "map.hpp"

namespace tessel {

namespace ops {

#define TESSEL_COMPARISON_OP(Name, op)                             \
  struct Name {                                                    \
    template <class A, class B>                                    \
    TESSEL_HOST_DEVICE constexpr bool operator()(A a, B b) const { \
      using R = promote_t<A, B>;                                   \
      return static_cast<R>(a) op static_cast<R>(b);               \
    }                                                              \
  };
TESSEL_COMPARISON_OP(Equal, ==)
TESSEL_COMPARISON_OP(NotEqual, !=)
TESSEL_COMPARISON_OP(Less, <)
TESSEL_COMPARISON_OP(LessEqual, <=)
TESSEL_COMPARISON_OP(Greater, >)
TESSEL_COMPARISON_OP(GreaterEqual, >=)
#undef TESSEL_COMPARISON_OP

}  // namespace ops

template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto operator==(A&& a, B&& b) {
  return detail::make_binary(ops::Equal{}, std::forward<A>(a), std::forward<B>(b));
}
template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto operator!=(A&& a, B&& b) {
  return detail::make_binary(ops::NotEqual{}, std::forward<A>(a), std::forward<B>(b));
}
template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto operator<(A&& a, B&& b) {
  return detail::make_binary(ops::Less{}, std::forward<A>(a), std::forward<B>(b));
}
template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto operator<=(A&& a, B&& b) {
  return detail::make_binary(ops::LessEqual{}, std::forward<A>(a), std::forward<B>(b));
}
template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto operator>(A&& a, B&& b) {
  return detail::make_binary(ops::Greater{}, std::forward<A>(a), std::forward<B>(b));
}
template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto operator>=(A&& a, B&& b) {
  return detail::make_binary(ops::GreaterEqual{}, std::forward<A>(a), std::forward<B>(b));
}

}  // namespace tessel
