// where(cond, a, b): a where cond is true (non-zero), else b, elementwise over the broadcast of
// all three; a and b combine in their promoted type.
#pragma once

#include <utility>

#include "map.hpp"

namespace tessel {

namespace ops {

struct Where {
  template <class C, class A, class B>
  TESSEL_HOST_DEVICE constexpr promote_t<A, B> operator()(C c, A a, B b) const {
    using R = promote_t<A, B>;
    return static_cast<bool>(c) ? static_cast<R>(a) : static_cast<R>(b);
  }
};

}  // namespace ops

template <Operand C, Operand A, Operand B>
requires(ArrayOperand<C> || ArrayOperand<A> || ArrayOperand<B>) auto where(C&& cond, A&& a, B&& b) {
  // A scalar branch adopts the other branch's type, as in a binary operation.
  if constexpr (ScalarOperand<A> && ArrayOperand<B>) {
    using E = detail::operand_value_t<B>;
    return detail::make_map(ops::Where{}, std::forward<C>(cond),
                            detail::as_expr_next_to<E>(std::forward<A>(a)), std::forward<B>(b));
  } else if constexpr (ScalarOperand<B> && ArrayOperand<A>) {
    using E = detail::operand_value_t<A>;
    return detail::make_map(ops::Where{}, std::forward<C>(cond), std::forward<A>(a),
                            detail::as_expr_next_to<E>(std::forward<B>(b)));
  } else {
    return detail::make_map(ops::Where{}, std::forward<C>(cond), std::forward<A>(a),
                            std::forward<B>(b));
  }
}

}  // namespace tessel
