// softmax(x, mode<I>) and log_softmax(x, mode<I>) along one mode (default: the last), as fused row
// operations: per row one pass computes the logsumexp (online max-and-sum), a second writes
// exp(x - lse) or x - lse. Computed in the floating type of x (float for half / bfloat16).
// A row containing +inf gives NaN where x is +inf and 0 elsewhere; an all -inf row gives NaN.
#pragma once

#include <type_traits>
#include <utility>

#include "leaf.hpp"
#include "mode.hpp"

namespace tessel {

// The row operations: x - logsumexp(x) along the mode, exponentiated (softmax) or not.
namespace rowop {
struct Softmax {
  static constexpr bool log = false;
};
struct LogSoftmax {
  static constexpr bool log = true;
};
}  // namespace rowop

namespace detail {

// Kind along mode Axis of the input; the result has the input's shape.
template <class Kind, Expression E, std::size_t Axis>
struct RowOp : ExprBase {
  using kind = Kind;
  using input_type = E;
  using value_type = floating_t<typename E::value_type>;
  static constexpr std::size_t axis = Axis;
  static constexpr std::size_t rank = E::rank;

  E input;

  explicit RowOp(E const& e) : input(e) {}
  ExprShape<rank> shape() const noexcept { return input.shape(); }
};

template <class Kind, int I, class X>
auto make_row_op(X&& x) {
  auto e = as_expr(std::forward<X>(x));
  using E = decltype(e);
  static_assert(E::rank > 0, "tessel: softmax needs an expression of rank >= 1.");
  return RowOp<Kind, E, normalize_mode<I, E::rank>>(e);
}

}  // namespace detail

template <ArrayOperand X, int I = -1>
auto softmax(X&& x, Mode<I> = {}) {
  return detail::make_row_op<rowop::Softmax, I>(std::forward<X>(x));
}
template <ArrayOperand X, int I = -1>
auto log_softmax(X&& x, Mode<I> = {}) {
  return detail::make_row_op<rowop::LogSoftmax, I>(std::forward<X>(x));
}

}  // namespace tessel
