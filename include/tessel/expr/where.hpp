// where(cond, a, b): a where cond is true (non-zero), else b, elementwise over the broadcast of
// all three; a and b combine in their promoted type.
#pragma once

#include <bit>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "map.hpp"

namespace tessel {

namespace ops {

struct Where {
  template <class C, class A, class B>
  TESSEL_HOST_DEVICE constexpr promote_t<A, B> operator()(C c, A a, B b) const {
    using R = promote_t<A, B>;
    R const x = static_cast<R>(a), y = static_cast<R>(b);
    if constexpr (std::is_arithmetic_v<R> && !std::is_same_v<R, bool> &&
                  (sizeof(R) == 1 || sizeof(R) == 2 || sizeof(R) == 4 || sizeof(R) == 8)) {
      // A select on the bits, without a branch: a data-dependent condition (a pruning mask) would
      // mispredict half the time, and the branch-free loop vectorizes. Both operands are values
      // already, so nothing is evaluated that the branch would have skipped.
      using U = std::conditional_t<
          sizeof(R) == 8, std::uint64_t,
          std::conditional_t<sizeof(R) == 4, std::uint32_t,
                             std::conditional_t<sizeof(R) == 2, std::uint16_t, std::uint8_t>>>;
      U const keep_x = static_cast<U>(U{0} - static_cast<U>(static_cast<bool>(c)));
      return std::bit_cast<R>(
          static_cast<U>((std::bit_cast<U>(x) & keep_x) | (std::bit_cast<U>(y) & ~keep_x)));
    } else {
      return static_cast<bool>(c) ? x : y;
    }
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
