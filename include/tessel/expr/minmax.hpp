// Elementwise max(a, b) and min(a, b) of broadcast operands; NaN propagates (torch.maximum).
// The one-operand forms max(x) / max(x, mode<I>) are reductions (reduce.hpp).
#pragma once

#include <utility>

#include "map.hpp"
#include "scalar_math.hpp"

namespace tessel {

namespace ops {

struct Max {
  template <class A, class B>
  TESSEL_HOST_DEVICE constexpr promote_t<A, B> operator()(A a, B b) const {
    using R = promote_t<A, B>;
    return math::max(static_cast<R>(a), static_cast<R>(b));
  }
};
struct Min {
  template <class A, class B>
  TESSEL_HOST_DEVICE constexpr promote_t<A, B> operator()(A a, B b) const {
    using R = promote_t<A, B>;
    return math::min(static_cast<R>(a), static_cast<R>(b));
  }
};

}  // namespace ops

template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto max(A&& a, B&& b) {
  return detail::make_binary(ops::Max{}, std::forward<A>(a), std::forward<B>(b));
}
template <Operand A, Operand B>
requires(ArrayOperand<A> || ArrayOperand<B>) auto min(A&& a, B&& b) {
  return detail::make_binary(ops::Min{}, std::forward<A>(a), std::forward<B>(b));
}

}  // namespace tessel
