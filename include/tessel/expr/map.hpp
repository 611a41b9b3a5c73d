// The elementwise node: an n-ary functor applied to its children element by element, the children
// broadcast to a common shape (NumPy rules). Every elementwise operator (arithmetic, math,
// comparisons, where, cast) is a Map with its own functor; `map(f, xs...)` applies a user functor.
#pragma once

#include <algorithm>
#include <type_traits>
#include <utility>

#include "../core/tuple.hpp"
#include "leaf.hpp"

namespace tessel {

namespace detail {

template <class... Cs>
constexpr std::size_t max_rank() {
  std::size_t r = 0;
  ((r = std::max(r, Cs::rank)), ...);  // std::max: nvcc flags `0 > r` as a pointless comparison
  return r;
}

template <std::size_t R>
ExprShape<R> fold_broadcast(ExprShape<R> const& acc) {
  return acc;
}
template <std::size_t R, class C, class... Cs>
auto fold_broadcast(ExprShape<R> const& acc, C const& c, Cs const&... cs) {
  return fold_broadcast(broadcast_shapes(acc, c.shape()), cs...);
}

// op(children(i)...) for every element i of the broadcast shape.
template <class Op, Expression... Cs>
struct Map : ExprBase {
  using value_type =
      std::remove_cvref_t<std::invoke_result_t<Op const&, typename Cs::value_type...>>;
  static constexpr std::size_t rank = max_rank<Cs...>();
  static_assert(sizeof...(Cs) > 0, "tessel: a map needs at least one operand.");

  Op op;
  tuple<Cs...> children;
  ExprShape<rank> extents;

  // @post shape() is the broadcast of the children's shapes; tessel::Error when they do not
  //       broadcast
  explicit Map(Op o, Cs const&... cs)
      : op(o), children(cs...), extents(fold_broadcast(ExprShape<0>{}, cs...)) {}
  ExprShape<rank> const& shape() const noexcept { return extents; }
};

template <class Op, class... Xs>
auto make_map(Op op, Xs&&... xs) {
  return Map<Op, decltype(as_expr(std::forward<Xs>(xs)))...>(op, as_expr(std::forward<Xs>(xs))...);
}

// Op applied to two operands; a scalar adopts the other operand's compute type (see element.hpp).
template <class Op, class A, class B>
auto make_binary(Op op, A&& a, B&& b) {
  if constexpr (ScalarOperand<A>) {
    using E = operand_value_t<B>;
    return make_map(op, as_expr_next_to<E>(std::forward<A>(a)), std::forward<B>(b));
  } else if constexpr (ScalarOperand<B>) {
    using E = operand_value_t<A>;
    return make_map(op, std::forward<A>(a), as_expr_next_to<E>(std::forward<B>(b)));
  } else {
    return make_map(op, std::forward<A>(a), std::forward<B>(b));
  }
}

}  // namespace detail

// f applied elementwise to the broadcast operands: map(f, x, y)(i) == f(x(i), y(i)). f is a
// copyable functor; mark its operator() TESSEL_HOST_DEVICE so the CUDA executor can run it.
// User functors run on the host's scalar path (only tessel's own operators have packet forms).
template <class F, Operand... Xs>
requires(ArrayOperand<Xs> || ...) auto map(F f, Xs&&... xs) {
  return detail::make_map(f, std::forward<Xs>(xs)...);
}

}  // namespace tessel
